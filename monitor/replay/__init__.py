"""Traffic profiles and the replay benchmark (``m3mon profile``, ``m3mon replay``)."""
