#!/usr/bin/env bash
# The project's one test command (README "Tests"; .ci/run calls exactly this).
# On a fresh machine it installs what is missing (a virtual environment with the
# package and its test extra, Debian's chromium and PostgreSQL for the tests that use
# them), then runs every test. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip 2>&1 | grep -v "^WARNING: Location" || true
.venv/bin/python -m pip install -q --disable-pip-version-check -e ".[test]" 2>&1 | grep -v "^WARNING: Location" || true
.venv/bin/python -c "import genwidgets, httpx, pydantic, ipywidgets, av, PIL, nbclient, playwright, importlinter" \
  || { echo "the Python dependencies did not install" >&2; exit 1; }
# What a wheel installs beside the package and an editable install skips (setuptools
# installs no data files in editable mode): the config that enables genwidgets'
# Jupyter server extension in this environment's servers.
mkdir -p .venv/etc/jupyter/jupyter_server_config.d
cp jupyter-config/jupyter_server_config.d/genwidgets.json .venv/etc/jupyter/jupyter_server_config.d/

# Debian's packages some tests use, each found by the file or command it brings:
# chromium for the real-browser tests; the PostgreSQL server for the class gateway's
# tests on several processes over one database (tests/serve/conftest.py starts a
# throwaway cluster with its initdb); openssl, which makes the certificate of the class
# gateway's TLS test. What is missing is installed in one apt-get run.
missing=()
command -v chromium >/dev/null 2>&1 || missing+=("chromium:the real-browser tests")
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 \
  || missing+=("postgresql:the class gateway's PostgreSQL tests")
command -v openssl >/dev/null 2>&1 || missing+=("openssl:the class gateway's TLS test")
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    packages=("${missing[@]%%:*}")
    echo "installing Debian's ${packages[*]} for the tests..."
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${packages[@]}" >/dev/null
  else
    for item in "${missing[@]}"; do
      echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!" >&2
      echo "!!! ${item%%:*} is missing and cannot be installed here (not root, or no" >&2
      echo "!!! apt-get): ${item#*:} will be SKIPPED." >&2
      echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!" >&2
    done
  fi
fi

# Bytecode is written (beside the sources, in the __pycache__ folders .gitignore leaves
# out) and read again, even where the environment says not to: each of the four
# workers, and every command, kernel and server a test starts, otherwise compiles
# genwidgets and rewrites the test modules' asserts anew (16.6 s of CPU to collect the
# fast tier, 5.9 s from the cache: docs/decisions.md#parallel-files).
unset PYTHONDONTWRITEBYTECODE
# Four workers, each taking whole files (each file's tests in their order, its
# module fixtures made once): most of the suite's time is waiting on servers,
# kernels and browsers, not the CPU (docs/decisions.md#parallel-files). `-n 0`
# among the arguments runs it in one process (for --pdb, say).
exec .venv/bin/python -m pytest -n 4 --dist loadfile --no-loadscope-reorder "$@"
