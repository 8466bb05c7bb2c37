#!/usr/bin/env bash
# Installs the client libraries the client tests drive Loom with (tests/clients): the openai
# Python SDK, pydantic and jsonschema, from PyPI. None is needed to build or serve.
set -euo pipefail
packages=(openai pydantic jsonschema)
if python3 -c "import openai, pydantic, jsonschema" 2>/dev/null; then exit 0; fi
# A Debian-managed python3 refuses plain pip installs (PEP 668); then ask for it explicitly.
python3 -m pip install --quiet "${packages[@]}" 2>/dev/null ||
  python3 -m pip install --quiet --break-system-packages "${packages[@]}"
