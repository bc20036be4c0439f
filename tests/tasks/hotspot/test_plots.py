"""The forward-model figures render and show what they claim."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np

from ibo_pymc.tasks.hotspot import plots
from ibo_pymc.tasks.hotspot.forward import argmax_curve


def test_figures_render(tmp_path):
    f1 = plots.plot_click_region_surface("UCB", 0.8, 5.0)
    f2 = plots.plot_acquisition_surface("PI", 10.0, tau=0.6)
    f3 = plots.plot_acquisition_curves("EI", [0, 5, 15, 30])
    for k, f in enumerate((f1, f2, f3)):
        p = tmp_path / f"f{k}.png"
        f.savefig(p)
        assert p.stat().st_size > 5000
    # the surface plot draws the augmented argmax curve (solid) and the plain one (dashed)
    lines = f2.axes[0].get_lines()
    d = np.linspace(-34, 34, 137)
    assert np.allclose(lines[0].get_ydata(), argmax_curve("PI", 10.0, d, tau=0.6))
    assert lines[2].get_linestyle() == "--"
    assert len(f3.axes[0].get_lines()) == 4
