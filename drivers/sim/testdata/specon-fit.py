#!/usr/bin/env python3
"""Fit SpeCon's container truth (drivers/sim/specontruth.go) to the paper's
baseline measurements, never to SpeCon's own results.

The data are the default scheduler's (DS) numbers in §VI of
../shared/papers/004_4e1d1f6c0cd4448a.txt: the fixed schedule (§VI-B: 20
VAE, one every 50 s, 4 workers: average completion 275.2 s, makespan
1260 s), and the random schedules (§VI-C2: 20 in [0, 300] s, makespan
1421 s; 30 in [0, 600] s, average 865.7 s, makespan 1760 s; §VI-D: 50 in
[0, 1200] s on 8 workers, average 596.3 s, makespan 2070 s). DS places
container k on worker k mod W (§VI-A2) and never moves it.

This replays those runs (containers start 15 s after arriving: the 5 s
save/resume overhead of Fig. 2 as the start cost plus the simulator's
10 s profiling) with the truth's step time: a container among n training
on its worker gets P/n of its P usable cores, runs a step in
((1-p) + p/c) / ((1-p) + p/P) of its time alone (Amdahl, parallel
fraction p; a share below one core time-slices), and shared cache and
memory bandwidth add a factor 1 + kappa (n - 1). It grid-searches the
length scale (relative lengths of the five models as assumed in
specon.go), p and kappa for the least squared relative error over the
seven DS numbers, random schedules averaged over seeds 1-5 (Python's
random, not the simulator's draws).

    python3 drivers/sim/testdata/specon-fit.py
"""
import random

REL = [200, 260, 300, 180, 220]  # VAE, GRU, Bi-RNN, RNN, Dynamic RNN
P = 16 * 0.8  # usable cores: 16, of which Kubernetes leaves about 80% (§VI-C2)
START = 15.0


def work(c, p):
    return (1 - p) + p / c if c >= 1 else 1 / c


def slow(n, p, k):
    return work(P / n, p) / work(P, p) * (1 + k * (n - 1))


def run(arr, p, k, W):
    jobs = [dict(a=a, node=i % W, s=a + START, rem=T, fin=None) for i, (a, T) in enumerate(arr)]
    t = 0.0
    while True:
        live = [j for j in jobs if j['fin'] is None]
        if not live:
            break
        active = [j for j in live if j['s'] <= t + 1e-9]
        cnt = {}
        for j in active:
            cnt[j['node']] = cnt.get(j['node'], 0) + 1
        nxt = min([j['s'] for j in live if j['s'] > t + 1e-9] + [float('inf')])
        for j in active:
            nxt = min(nxt, t + j['rem'] * slow(cnt[j['node']], p, k))
        for j in active:
            j['rem'] -= (nxt - t) / slow(cnt[j['node']], p, k)
            if j['rem'] <= 1e-7:
                j['fin'] = nxt
        t = nxt
    return sum(j['fin'] - j['a'] for j in jobs) / len(jobs), max(j['fin'] for j in jobs)


def rnd(n, span, scale, seed):
    r = random.Random(seed)
    d = sorted((round(r.random() * span), r.randrange(5)) for _ in range(n))
    return [(a, REL[m] * scale) for a, m in d]


PAPER = {'fixed': (275.2, 1260), 'r20': (None, 1421), 'r30': (865.7, 1760), 'r50': (596.3, 2070)}


def score(scale, p, k):
    out = {'fixed': run([(50 * i, REL[0] * scale) for i in range(20)], p, k, 4)}
    for name, n, span, W in [('r20', 20, 300, 4), ('r30', 30, 600, 4), ('r50', 50, 1200, 8)]:
        rs = [run(rnd(n, span, scale, s), p, k, W) for s in range(1, 6)]
        out[name] = (sum(x[0] for x in rs) / len(rs), sum(x[1] for x in rs) / len(rs))
    err = 0.0
    for key, (a, m) in PAPER.items():
        if a:
            err += ((out[key][0] - a) / a) ** 2
        err += ((out[key][1] - m) / m) ** 2
    return err, out


res = []
for scale in [x / 100 for x in range(90, 141, 5)]:
    for p in [0.8, 0.9, 0.95, 0.975, 0.99, 1.0]:
        for k in [0, 0.025, 0.05, 0.1, 0.2]:
            e, o = score(scale, p, k)
            res.append((e, scale, p, k, o))
res.sort(key=lambda r: r[0])
print('error scale p kappa | DS avg/makespan: fixed r20 r30 r50 (paper: 275/1260 -/1421 866/1760 596/2070)')
for e, scale, p, k, o in res[:8]:
    print(round(e, 4), scale, p, k, '|', ' '.join('%d/%d' % (round(v[0]), round(v[1])) for v in o.values()))
