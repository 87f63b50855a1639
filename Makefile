# Two commands matter: `make demo` and `make test`. Both install what they need first.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PY     := $(BIN)/python
STAMP  := $(VENV)/.installed
LABEXT := jupyter_agent/labextension/package.json
export PATH := $(abspath $(BIN)):$(PATH)

.PHONY: demo test install labextension chromium lint bench clean

demo: install
	$(PY) -m jupyter_agent.demo

test: install chromium
	$(PY) -m pytest -q -p no:cacheprovider

install: $(STAMP) $(LABEXT)

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

# The `local` extra compiles llama.cpp once (about 4 minutes on 2 cores; pip caches the wheel).
$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install -q -e ".[test,local]"
	touch $@

# The JupyterLab extension: built with the JupyterLab builder, linked into the venv.
$(LABEXT): $(STAMP) $(wildcard labextension/src/*) $(wildcard jupyter_agent/ui/static/*) labextension/package.json
	cd labextension && npm ci --no-audit --no-fund --loglevel=error
	cd labextension && npm run build:prod
	$(BIN)/jupyter labextension develop --overwrite . >/dev/null
	@touch $@

labextension: $(LABEXT)

# Browser tests use Debian's Chromium (never a downloaded browser).
chromium:
	@command -v chromium >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

lint: $(STAMP)
	$(BIN)/ruff check jupyter_agent tests bench

bench: install
	$(PY) -m bench

clean:
	rm -rf $(VENV) labextension/node_modules labextension/lib jupyter_agent/labextension test-artifacts demo-output
