"""The figure of a measured run's replay (`serq measured --figure OUT`,
serq.calib): per request, the
predicted TTFT, TPOT and latency against the measured (serQ and, when the
bundle has it, LLMServingSim), with the diagonal; below, each metric's CDF
measured, serQ's and the peer's.  matplotlib is the `plot` extra."""

from __future__ import annotations

from ..calib import metrics as MX


def figure(res, path: str) -> None:
    from . import plot_format, save
    from ..api.extras import extra
    plot_format(path)
    Figure = extra("matplotlib.figure", "plot").Figure
    np = extra("numpy")
    rp = res.replay
    meas, ours = rp.values("measured"), rp.values("predicted")
    peer = rp.values("peer") if rp.peer is not None else None
    fig = Figure(figsize=(13, 8), layout="constrained")
    axes = fig.subplots(2, 3)
    unit = {"ttft": (1.0, "s"), "tpot": (1e3, "ms"), "latency": (1.0, "s")}
    for j, m in enumerate(MX.METRICS):
        k, u = unit[m]
        ax = axes[0][j]
        x = np.asarray(meas[m]) * k
        if peer is not None:
            ax.scatter(x, np.asarray(peer[m]) * k, s=8, alpha=0.5, color="tab:gray", label="LLMServingSim")
        ax.scatter(x, np.asarray(ours[m]) * k, s=8, alpha=0.7, color="tab:blue", label="serQ")
        lo, hi = float(x.min()), float(x.max())
        ax.plot([lo, hi], [lo, hi], color="black", lw=0.8)
        ax.set_xlabel(f"measured {MX.TITLES[m]} ({u})")
        ax.set_ylabel(f"predicted {MX.TITLES[m]} ({u})")
        if m == "ttft":
            ax.set_xscale("log")
            ax.set_yscale("log")
        ax.legend(loc="upper left", fontsize=8)
        ax = axes[1][j]
        for vals, name, color in ((meas, "measured", "black"), (ours, "serQ", "tab:blue"),
                                  (peer, "LLMServingSim", "tab:gray")):
            if vals is None:
                continue
            v = np.sort(np.asarray(vals[m]) * k)
            ax.step(v, np.arange(1, len(v) + 1) / len(v), where="post", label=name, color=color,
                    ls="--" if name == "LLMServingSim" else "-")
        ax.set_xlabel(f"{MX.TITLES[m]} ({u})")
        ax.set_ylabel("fraction of requests")
        if m == "ttft":
            ax.set_xscale("log")
        ax.legend(loc="lower right", fontsize=8)
    fig.suptitle(f"{res.run.label()}: {res.run.model}, vLLM {res.run.vllm_version}: predicted against measured "
                 "per request (top), CDFs (bottom)", fontsize=10)
    save(fig, path)
