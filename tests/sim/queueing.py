"""Queueing programs with closed forms, built as IR."""

from serq.ir import model as M

from builder import A, Builder, exp, now


def single(kind, service, lam, horizon, warmup, seed):
    """Open Poisson(lam) sessions of one request served at one stage."""
    b = Builder("examples/single-turn/mg1.sq")
    svc = b.stage("svc", kind)
    t0 = b.attr("t0")
    b.session([b.turn(), b.set(t0, now()), b.run(svc, service),
               b.observe("response", now() - A(t0))])
    return b.program(arrival=M.APoisson(lam), horizon=horizon, warmup=warmup, seed=seed)


def closed(n, think, service, horizon, warmup, seed):
    """The closed M/M/1//N network: n sessions that think (a delay) and are
    served (a fifo), forever."""
    b = Builder("examples/multi-turn/closed.sq")
    svc = b.stage("svc", M.KFifo(1))
    z = b.stage("think", M.KDelay())
    t0 = b.attr("t0")
    b.session([b.loop([
        b.run(z, exp(think), side="client"),
        b.turn(),
        b.set(t0, now()),
        b.run(svc, exp(service)),
        b.observe("response", now() - A(t0)),
    ], side="client")])
    return b.program(arrival=M.AClosed(n), horizon=horizon, warmup=warmup, seed=seed)


def mva(n, think, service):
    """Mean value analysis of the closed network: (response, throughput)."""
    q = 0.0
    r = x = 0.0
    for k in range(1, n + 1):
        r = service * (1 + q)
        x = k / (r + think)
        q = x * r
    return r, x


def pk(lam, mean, cv2):
    """Pollaczek-Khinchine: the M/G/1 mean response time."""
    rho = lam * mean
    return mean + rho * mean * (1 + cv2) / (2 * (1 - rho))
