# skyline_nb developer entry points. `make lab` and `make test` do all set-up on a fresh clone.
PYTHON ?= python3
TORCH_SPEC ?= torch==2.13.0
VENV := .venv
BIN := $(VENV)/bin
JS_SRC := $(wildcard js/src/*.js js/src/*.css js/shared/*.js)
LABEXT_SRC := $(wildcard js/labextension/*.js js/labextension/package.json js/shared/*.js)
WIDGET_BUNDLE := skyline_nb/widget/static/widget.js
LABEXT_BUILT := skyline_nb/labextension/package.json
PORT ?= 8888
PYTEST_ARGS ?=

.PHONY: setup lab demo test lint jstest pytest bench fuzz clean

setup: $(VENV)/.installed $(WIDGET_BUNDLE) $(LABEXT_BUILT)

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# torch first, from the exact spec, so nothing later pulls a multi-GB CUDA build.
$(VENV)/.torch: | $(BIN)/python
	$(BIN)/pip install -q "$(TORCH_SPEC)"
	touch $@

# Not `npm ci`: the npm mirror here lacks some other platforms' optional binaries (rspack's
# darwin/win32 builds), which `npm ci` insists on finding in the lock; `install --no-save`
# installs exactly the locked versions for this platform and leaves the lock untouched.
node_modules/.package-lock.json: package-lock.json
	npm install --no-save --no-audit --no-fund
	touch $@

$(WIDGET_BUNDLE): node_modules/.package-lock.json $(JS_SRC)
	npm run -s build:widget

# The companion labextension: @jupyter/builder's build script, run with node directly (the
# pip `jupyter-builder` wrapper would run jlpm inside js/labextension). Takes about a second.
$(LABEXT_BUILT): node_modules/.package-lock.json $(LABEXT_SRC)
	npm run -s build:labextension > /dev/null

# Make has built the JS already, so the editable install skips hatch-jupyter-builder's
# `npm install && npm run build` (it would run on every editable install).
# The editable install copies the wheel's shared data into the venv: with develop's link (below)
# still in place it would write install.json through it into skyline_nb/labextension, and the
# next wheel build would refuse the duplicate. So the link goes first; `.installed` restores it.
$(VENV)/.installed-py: pyproject.toml $(VENV)/.torch | $(WIDGET_BUNDLE) $(LABEXT_BUILT)
	if [ -L $(VENV)/share/jupyter/labextensions/skyline-nb ]; then \
		rm $(VENV)/share/jupyter/labextensions/skyline-nb; fi
	HATCH_JUPYTER_BUILDER_SKIP_NPM=1 $(BIN)/pip install -q -e ".[dev]"
	touch $@

# `jupyter-builder develop` (which the deprecated `jupyter labextension develop` calls) links
# share/jupyter/labextensions/skyline-nb to skyline_nb/labextension: rebuilds need no re-link.
$(VENV)/.installed: $(VENV)/.installed-py | $(LABEXT_BUILT)
	$(BIN)/jupyter-builder develop --overwrite . > /dev/null
	touch $@

lab: setup
	$(BIN)/jupyter lab --ip=127.0.0.1 --port=$(PORT) --no-browser --allow-root \
		--ServerApp.root_dir=$(CURDIR)/notebooks notebooks/quickstart.ipynb

demo: setup
	$(BIN)/python -m skyline_nb.demo --out build

lint: setup
	$(BIN)/ruff check skyline_nb tests benchmarks

jstest: setup
	npx vitest run

pytest: setup
	$(BIN)/python -m pytest $(PYTEST_ARGS)

test: lint jstest pytest

bench: setup
	@for script in benchmarks/*.py; do echo "== $$script"; $(BIN)/python $$script || exit 1; done

fuzz: setup
	SKYLINE_FUZZ_EXAMPLES=10000 $(BIN)/python -m pytest tests/unit/test_source_property.py -q

clean:
	rm -rf build dist skyline_nb/widget/static skyline_nb/labextension node_modules $(VENV)
