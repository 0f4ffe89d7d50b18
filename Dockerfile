# m3-monitor: the `m3mon` service (run, sim, generate, report). Used by compose.yaml.
FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY monitor ./monitor
COPY migrations ./migrations
RUN pip install --no-cache-dir . && useradd --system --home /var/lib/m3mon m3mon \
    && mkdir -p /var/lib/m3mon && chown m3mon /var/lib/m3mon
USER m3mon
WORKDIR /var/lib/m3mon
EXPOSE 9464
ENTRYPOINT []
CMD ["m3mon", "--help"]
