"""A referee's recomputation of a build's Holm grades and robustness words, apart from llmdyn.

Reads the values each executed chapter glued (``book/executed/*.ipynb``): per claim its
per-unit values (``_units``), its statistic (``_statistic``), interval method (``_method``),
rule (``_op``, ``_threshold``, ``_tolerance``), its 95 % grade (``_verdict``), and, where the
book reviewed it, its Holm grade (``_holm``) and robustness word (``_robustness``) with the
specifications behind it (``_specifications``). It then recomputes, with scipy and statsmodels
only (no llmdyn import):

- each claim's 95 % interval from its per-unit values, checked against the glued one;
- each claim's two-sided p-value, as the α at which its own method's (1 − α) interval stops
  deciding it (bisection on α), and Holm's step-down over each chapter's family
  (``statsmodels.stats.multitest.multipletests(method="holm")``): a rejected row keeps its
  grade, any other is inconclusive;
- each robustness word: the grade under each moved threshold and under each variant (its
  interval recomputed from its own per-unit values), fragile when one differs or the split
  is not identified.

Usage::

    python tools/referee.py book/executed            # the default build's chapters
    python tools/referee.py DIR --chapters 02_geometry_along_depth 04_jacobian_alignment

It prints one line per disagreement and a summary, and exits 1 if there is any.
"""

from __future__ import annotations

import argparse
import ast
import json
import math
import sys
from pathlib import Path

import numpy as np
from scipy import stats as sps
from statsmodels.stats.multitest import multipletests

ALPHA = 0.05
N_RESAMPLES, BATCH = 2000, 250  # the book's bootstrap: its draws, seeded 0
TOL = 1e-6  # relative agreement of a recomputed interval end with the glued one
HC4 = "pitman_morgan_hc4"  # an interval found numerically: judged here by its test at the threshold


def glued(path: Path) -> dict[str, object]:
    """The values an executed notebook glued (scrapbook-tagged outputs), parsed."""
    out: dict[str, object] = {}
    for cell in json.loads(path.read_text())["cells"]:
        for o in cell.get("outputs", []):
            meta = o.get("metadata", {}).get("scrapbook", {})
            if "name" not in meta:
                continue
            text = o.get("data", {}).get(meta.get("mime_prefix", "") + "text/plain", "")
            text = "".join(text) if isinstance(text, list) else text
            try:
                out[meta["name"]] = math.nan if text.strip() == "nan" else ast.literal_eval(text)
            except (ValueError, SyntaxError):
                out[meta["name"]] = text
    return out


def _t(level: float, df: float) -> float:
    return float(sps.t.ppf((1 + level) / 2, df))


def interval(kind: str, method: str, samples: list[np.ndarray], paired: bool, signed: bool,
             level: float) -> tuple[float, float]:
    """The interval of ``method`` at ``level``, written from the textbook formulas."""
    a = samples[0]
    n = min(len(s) for s in samples)
    if method == "t":
        x = a - samples[1] if kind == "difference" else a
        res = sps.ttest_1samp(x, 0.0).confidence_interval(level)
        return float(res.low), float(res.high)
    if method == "welch":
        res = sps.ttest_ind(a, samples[1], equal_var=False).confidence_interval(level)
        return float(res.low), float(res.high)
    if method == "delta_t":
        b = samples[1]
        ratio = a.mean() / b.mean()
        half = _t(level, n - 1) * np.std(a - ratio * b, ddof=1) / (math.sqrt(n) * abs(b.mean()))
        return ratio - half, ratio + half
    if method == "log_t":
        res = sps.ttest_1samp(np.log(a / samples[1]), 0.0).confidence_interval(level)
        with np.errstate(over="ignore"):
            return float(np.exp(res.low)), float(np.exp(res.high))
    if method == "ols_t":
        fit = sps.linregress(a, samples[1])
        half = _t(level, n - 2) * fit.stderr
        return fit.slope - half, fit.slope + half
    if method == "fisher_z":
        r = sps.pearsonr(a, samples[1]).statistic
        half = sps.norm.ppf((1 + level) / 2) / math.sqrt(n - 3)
        z = math.atanh(min(max(r, -1 + 1e-15), 1 - 1e-15))
        lo, hi = math.tanh(z - half), math.tanh(z + half)
        if signed:
            return lo * abs(lo), hi * abs(hi)
        return (0.0 if lo < 0 < hi else min(lo * lo, hi * hi)), max(lo * lo, hi * hi)
    if method == "exact":
        ci = sps.binomtest(int(round(a.sum())), n).proportion_ci(level, method="exact")
        return float(ci.low), float(ci.high)
    if method == "order":  # the sign test's interval: order statistics x_(j+1), x_(n-j)
        x = np.sort(a)
        j = max((k for k in range(n) if sps.binom.cdf(k, n, 0.5) <= (1 - level) / 2),
                default=-1)
        return (math.nan, math.nan) if j < 0 else (float(x[j]), float(x[n - 1 - j]))
    if method == "pitman_morgan":
        b = samples[1]
        f = np.var(a, ddof=1) / np.var(b, ddof=1)
        r = sps.pearsonr(a, b).statistic
        k = 1 + 2 * (1 - r * r) * _t(level, n - 2) ** 2 / (n - 2)
        root = math.sqrt(max(k * k - 1, 0.0))
        return f * (k - root), f * (k + root)
    if method == "zou":
        y, x1, x2 = samples
        r1, r2 = sps.pearsonr(y, x1).statistic, sps.pearsonr(y, x2).statistic
        r12 = sps.pearsonr(x1, x2).statistic
        half = sps.norm.ppf((1 + level) / 2) / math.sqrt(n - 3)
        l1, u1 = (math.tanh(math.atanh(r1) + s * half) for s in (-1, 1))
        l2, u2 = (math.tanh(math.atanh(r2) + s * half) for s in (-1, 1))
        c = ((r12 - r1 * r2 / 2) * (1 - r1 ** 2 - r2 ** 2 - r12 ** 2) + r12 ** 3) / (
            (1 - r1 ** 2) * (1 - r2 ** 2))
        d = r1 - r2
        return (d - math.sqrt((r1 - l1) ** 2 + (u2 - r2) ** 2 - 2 * c * (r1 - l1) * (u2 - r2)),
                d + math.sqrt((u1 - r1) ** 2 + (r2 - l2) ** 2 - 2 * c * (u1 - r1) * (r2 - l2)))
    if method in ("bca", "percentile"):
        return _bootstrap(kind, samples, paired, signed, level)
    raise KeyError(method)


STATISTICS = {
    "mean": lambda a: a.mean(-1), "median": lambda a: np.median(a, -1),
    "fraction": lambda a: a.mean(-1),
    "ratio": lambda a, b: a.mean(-1) / b.mean(-1),
    "difference": lambda a, b: a.mean(-1) - b.mean(-1),
    "independent_difference": lambda a, b: a.mean(-1) - b.mean(-1),
    "log_ratio": lambda a, b: np.exp(np.log(a / b).mean(-1)),
    "variance_ratio": lambda a, b: a.var(-1, ddof=1) / b.var(-1, ddof=1),
}


def _bootstrap(kind, samples, paired, signed, level):
    """The BCa interval (scipy, the book's draws); the percentile one where BCa is undefined."""
    if kind not in STATISTICS:
        raise KeyError(f"bootstrap of a {kind}")
    stat = STATISTICS[kind]
    res = sps.bootstrap(samples, lambda *s, axis=-1: stat(*s), n_resamples=N_RESAMPLES,
                        batch=BATCH, vectorized=True, paired=paired, axis=-1,
                        confidence_level=level, method="BCa", rng=np.random.default_rng(0))
    lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
    if math.isfinite(lo) and math.isfinite(hi):
        return lo, hi
    draws = np.asarray(res.bootstrap_distribution, dtype=np.float64)
    draws = draws[np.isfinite(draws)]
    return tuple(float(q) for q in np.quantile(draws, [(1 - level) / 2, (1 + level) / 2]))


def judge(op: str, threshold: float, tolerance: float, lo: float, hi: float) -> str:
    """The three-grade rule on [lo, hi]."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return "no verdict"
    if op == "within":
        a, b = threshold - tolerance, threshold + tolerance
        if a <= lo and hi <= b:
            return "holds"
        return "does not hold" if hi < a or lo > b else "inconclusive"
    clears = {">=": lambda x: x >= threshold, ">": lambda x: x > threshold,
              "<=": lambda x: x <= threshold, "<": lambda x: x < threshold}[op]
    if clears(lo) and clears(hi):
        return "holds"
    return "inconclusive" if clears(lo) or clears(hi) else "does not hold"


class Row:
    """One glued claim: its data, and its interval at any level."""

    def __init__(self, values: dict[str, object], cid: str, prefix: str = ""):
        get = (lambda k: values[f"{cid}_{k}"]) if not prefix else (lambda k: values[k])
        self.id = cid
        units = json.loads(str(get("units")) or "{}")
        stat = json.loads(str(get("statistic")) or "{}")
        self.samples = [np.asarray(s, dtype=np.float64) for s in units.get("samples", [])]
        self.kind, self.paired = stat.get("kind", ""), stat.get("paired", True)
        self.signed = stat.get("signed", False)
        if self.kind == "difference" and not self.paired:
            self.kind = "independent_difference"
        self.method = str(get("method"))
        self.op, self.threshold = str(get("op")), float(get("threshold"))
        self.tolerance = float(get("tolerance")) if self.op == "within" else 0.0
        self.lo, self.hi = float(get("lo")), float(get("hi"))

    def at(self, level: float) -> tuple[float, float]:
        """The row's interval at a two-sided ``level``."""
        return interval(self.kind, self.method, self.samples, self.paired, self.signed, level)

    def grade(self, level: float = 0.95, op=None, threshold=None, tolerance=None) -> str:
        """The grade of the row's interval at ``level`` (its own rule unless one is given)."""
        if not self.method:
            return "no verdict"
        if self.method == HC4:
            return self._hc4_grade(level, op or self.op,
                                   self.threshold if threshold is None else threshold)
        lo, hi = self.at(level)
        return judge(op or self.op, self.threshold if threshold is None else threshold,
                     self.tolerance if tolerance is None else tolerance, lo, hi)

    def _hc4_grade(self, level: float, op: str, theta: float) -> str:
        """The Pitman–Morgan HC4 test of var(a)/var(b) = θ: its interval is where it accepts.

        Rejecting θ puts the whole interval on the sample ratio's side of θ.
        """
        a, b = self.samples
        n, c = len(a), math.sqrt(theta)
        x, y = a + c * b, a - c * b  # cov(x, y) = var(a) − θ var(b): y on x has slope 0
        dx, dy = x - x.mean(), y - y.mean()
        sxx = (dx * dx).sum()
        slope = (dx * dy).sum() / sxx
        resid = dy - slope * dx
        h = 1 / n + dx ** 2 / sxx  # leverage
        var = (dx ** 2 * resid ** 2 / (1 - h) ** np.minimum(4.0, n * h / 2)).sum() / sxx ** 2
        if abs(slope / math.sqrt(var)) <= _t(level, n - 2):
            return "inconclusive"
        f = np.var(a, ddof=1) / np.var(b, ddof=1)
        return judge(op, theta, 0.0, f, f)

    def p_value(self, steps: int = 40) -> float:
        """The α at which the (1 − α) interval stops deciding the row (1 if it never does)."""
        def decided(alpha: float) -> bool:
            return self.grade(1 - alpha) in ("holds", "does not hold")
        lo, hi = -12.0, 0.0  # log10 α
        if not decided(10 ** -0.001):
            return 1.0
        if decided(10 ** lo):
            return 10 ** lo
        for _ in range(steps):
            mid = (lo + hi) / 2
            lo, hi = (lo, mid) if decided(10 ** mid) else (mid, hi)
        return 10 ** ((lo + hi) / 2)


def _first(text: object) -> str:
    return str(text).split(" (")[0]


def check_chapter(values: dict[str, object], name: str) -> tuple[list[str], dict[str, int]]:
    """Disagreements between the chapter's glue and this recomputation, and counts."""
    problems, counts = [], {"intervals": 0, "holm": 0, "robustness": 0, "skipped": 0}
    family = [k.removesuffix("_holm") for k in values if k.endswith("_holm")]
    rows = {}
    for cid in family:
        row = rows[cid] = Row(values, cid)
        if row.method == HC4:
            counts["skipped"] += 1  # its interval is not recomputed, its grade is
            continue
        lo, hi = row.at(0.95)
        if not (math.isclose(lo, row.lo, rel_tol=TOL, abs_tol=1e-12)
                and math.isclose(hi, row.hi, rel_tol=TOL, abs_tol=1e-12)):
            problems.append(f"{name}/{cid}: 95 % interval [{lo}, {hi}], glued "
                            f"[{row.lo}, {row.hi}] ({row.method})")
        counts["intervals"] += 1
    if family:
        m = {int(values[f"{cid}_holm_m"]) for cid in family}
        if m != {len(family)}:
            problems.append(f"{name}: the family has {len(family)} rows, glued m = {m}")
    if rows:
        ids = list(rows)
        p = [rows[c].p_value() for c in ids]
        rejected = multipletests(p, alpha=ALPHA, method="holm")[0]
        for cid, p_i, r in zip(ids, p, rejected, strict=True):
            unadjusted = _first(values[f"{cid}_verdict"])
            mine = unadjusted if r else "inconclusive"
            if mine != values[f"{cid}_holm"]:
                problems.append(f"{name}/{cid}: Holm {mine} (p = {p_i:.3g}), glued "
                                f"{values[f'{cid}_holm']}")
            counts["holm"] += 1
    for key in [k for k in values if k.endswith("_robustness")]:
        cid = key.removesuffix("_robustness")
        problem = check_robustness(values, cid)
        if problem:
            problems.append(f"{name}/{cid}: {problem}")
        counts["robustness"] += 1
    return problems, counts


def check_robustness(values: dict[str, object], cid: str) -> str:
    """"" when the recomputed word agrees with the glued one, else what differs."""
    specs = json.loads(str(values[f"{cid}_specifications"]))
    grade = _first(values[f"{cid}_verdict"])
    lo, hi = float(values[f"{cid}_lo"]), float(values[f"{cid}_hi"])
    flips = []
    for spec in specs:
        if spec["name"] == "not identified":
            flips.append(spec["name"])
        elif "id" in spec:  # a variant: its own units, method and rule
            row = Row(spec, spec["id"], prefix="spec")
            if row.method and not row.samples:
                got = _first(spec["grade"])  # no per-unit values kept: the book's grade
            else:
                got = row.grade()
            if got != grade:
                flips.append(spec["name"])
        elif judge(spec["op"], spec["threshold"], spec["tolerance"], lo, hi) != grade:
            flips.append(spec["name"])
    mine = "fragile" if flips else "robust"
    glued_word = str(values[f"{cid}_robustness"]).split(" ")[0]
    return "" if mine == glued_word else f"robustness {mine} ({', '.join(flips)}), glued " \
                                         f"{values[f'{cid}_robustness']}"


def main(argv: list[str] | None = None) -> int:
    """Check the chapters of a build; 0 when every recomputation agrees."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("executed", type=Path, help="the directory of executed chapters")
    parser.add_argument("--chapters", nargs="*", help="chapter names (default: every notebook)")
    args = parser.parse_args(argv)
    names = args.chapters or sorted(p.stem for p in args.executed.glob("*.ipynb"))
    problems, total = [], {}
    for name in names:
        found, counts = check_chapter(glued(args.executed / f"{name}.ipynb"), name)
        problems += found
        for k, v in counts.items():
            total[k] = total.get(k, 0) + v
    for line in problems:
        print(line)
    print(f"recomputed {total.get('intervals', 0)} intervals, {total.get('holm', 0)} Holm grades "
          f"and {total.get('robustness', 0)} robustness words over {len(names)} chapters "
          f"({total.get('skipped', 0)} HC4 intervals judged by their test only); "
          f"{len(problems)} disagreements")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
