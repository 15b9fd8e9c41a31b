FROM python:3.11-slim
COPY --from=ghcr.io/astral-sh/uv:latest /uv /usr/local/bin/uv
WORKDIR /srv/corral
ENV UV_PROJECT_ENVIRONMENT=/opt/venv PATH=/opt/venv/bin:$PATH PYTHONUNBUFFERED=1
COPY pyproject.toml uv.lock README.md ./
RUN uv sync --locked --no-dev --no-install-project
COPY app app
COPY workers workers
COPY migrations migrations
COPY sql sql
RUN uv sync --locked --no-dev
RUN useradd --system corral
USER corral
EXPOSE 4646
CMD ["corral", "server"]
