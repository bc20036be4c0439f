"""Write the reference extracts of the published grid-search results: ``python make_reference.py MODELFIT PARAMS``.

MODELFIT and PARAMS are ``modelResults/modelFit.csv`` and ``modelResults/paramEstimates.csv`` of
charleywu/cognitivemaps at commit a7a63d06f31ee1f0a0e71e625fbb615c13a207ef (MIT licence). Only the
GP-UCB ("RBF-UCB") and BMT-UCB rows and the columns the tests compare are kept.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
MODELS = ["RBF-UCB", "BMT-UCB"]


def main(modelfit: str, params: str) -> None:
    fit = pd.read_csv(modelfit)
    fit = fit[fit["ModelName"].isin(MODELS)]
    fit = fit[["participant", "context", "ModelName", "nLL", "R2", "kError", "lambda", "beta", "tau"]]
    fit.to_csv(HERE / "modelFit_ucb.csv", index=False, float_format="%.15g")
    par = pd.read_csv(params)
    par["ModelName"] = par["kernel"] + "-" + par["acq"]
    par = par[par["ModelName"].isin(MODELS)]
    par = par[["participant", "context", "ModelName", "leaveoutindex", "kError", "lambda", "beta", "tau", "roundnLL"]]
    par.to_csv(HERE / "paramEstimates_ucb.csv", index=False, float_format="%.15g")
    for p in (modelfit, params):
        print(Path(p).name, hashlib.sha256(Path(p).read_bytes()).hexdigest())
    print(f"wrote {len(fit)} and {len(par)} rows")


if __name__ == "__main__":
    main(*sys.argv[1:3])
