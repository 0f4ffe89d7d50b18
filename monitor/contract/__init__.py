"""The operating contract per class and one-dimension-at-a-time comparisons.

``m3mon contract`` and ``m3mon compare``; see docs/contract.md.
"""
