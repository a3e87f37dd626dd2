#!/usr/bin/env python3
"""Mutation fuzzing of the CLI's inputs: reports (JSON, mutated structurally and byte-wise) and
PyTorch snapshot pickles (byte-wise), each run through a command that reads it. Meant for a build
under AddressSanitizer and UndefinedBehaviorSanitizer (tools/fuzz-cli.sh makes one): a case counts
as found when a sanitizer reports, or the process dies of a signal; it is kept in FOUND.

usage: fuzz_cli.py CLI SEEDS_DIR FOUND_DIR CASES [RANDOM_SEED]
SEEDS_DIR holds the reports (*.json) and snapshots (*.pickle) to mutate; base.json and rank1.json, when
there, are also the fixed side of diff and merge.
"""
import copy
import json
import os
import random
import subprocess
import sys
import tempfile

WEIRD = [0, -1, 1, 2**31, 2**32, 2**53, 2**62, 2**63 - 1, 2**64 - 1, 2**64, -2**62, -2**63, 1e308,
         -1e308, 0.5, float('nan'), 'x', '', 'A' * 5000, None, True, [], {}, [1, 2, 3], {'a': 1}]


class Mutator:
    def __init__(self, rng):
        self.rng = rng

    def value(self, v):
        rng = self.rng
        r = rng.random()
        if r < 0.5:
            return rng.choice(WEIRD)
        if isinstance(v, list) and v:
            if r < 0.7:
                return v[:rng.randrange(len(v))]
            if r < 0.8:
                return v + v
            return [self.value(x) for x in v]
        if isinstance(v, dict) and v:
            v = dict(v)
            k = rng.choice(list(v))
            if r < 0.7:
                del v[k]
            else:
                v[k] = self.value(v[k])
            return v
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return v * rng.choice([-1, 2, 1000, 10**12])
        return rng.choice(WEIRD)

    def document(self, doc):
        doc = copy.deepcopy(doc)
        paths = list(_paths(doc))
        for _ in range(self.rng.randint(1, 4)):
            path = self.rng.choice(paths)
            if not path:
                continue
            try:
                parent = doc
                for key in path[:-1]:
                    parent = parent[key]
                parent[path[-1]] = self.value(parent[path[-1]])
            except (KeyError, IndexError, TypeError):
                pass
        return json.dumps(doc).encode()

    def data(self, data):
        rng = self.rng
        data = bytearray(data)
        if rng.random() < 0.3:
            return bytes(data[:rng.randrange(len(data))])
        for _ in range(rng.randint(1, 8)):
            i = rng.randrange(len(data))
            data[i] = rng.randrange(256) if rng.random() < 0.7 else rng.choice([0, 0xff, 0x7f, 0x80])
        return bytes(data)


def _paths(v, prefix=()):
    yield prefix
    if isinstance(v, dict):
        for k, x in v.items():
            yield from _paths(x, prefix + (k,))
    elif isinstance(v, list):
        for i, x in enumerate(v[:6]):
            yield from _paths(x, prefix + (i,))


def main():
    cli, seeds, found, cases = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    rng = random.Random(int(sys.argv[5]) if len(sys.argv) > 5 else 1)
    os.makedirs(found, exist_ok=True)
    work = tempfile.mkdtemp(prefix='fuzz-cli-')
    reports = {n: json.load(open(os.path.join(seeds, n))) for n in os.listdir(seeds) if n.endswith('.json')}
    snapshots = {n: open(os.path.join(seeds, n), 'rb').read() for n in os.listdir(seeds) if n.endswith('.pickle')}
    fixed = os.path.join(seeds, 'base.json')
    other = os.path.join(seeds, 'rank1.json')
    env = dict(os.environ, ASAN_OPTIONS='detect_leaks=0', UBSAN_OPTIONS='print_stacktrace=1')
    mutate = Mutator(rng)
    codes = {}
    bad = 0
    for case in range(cases):
        out = os.path.join(work, 'out')
        if os.path.exists(out):
            os.unlink(out)
        if not snapshots or rng.random() < 0.75:
            doc = reports[rng.choice(sorted(reports))]
            payload = mutate.document(doc) if rng.random() < 0.7 else mutate.data(json.dumps(doc).encode())
            path, suffix = os.path.join(work, 'report.json'), '.json'
            command = rng.choice([['report', path], ['report', path, '--growth'], ['report', path, '--tree'],
                                  ['report', path, '--format', 'json'], ['html', path, '-o', out],
                                  ['export', path, '--format', 'pprof', '-o', out],
                                  ['export', path, '--format', 'torch-snapshot', '-o', out],
                                  ['diff', fixed, path], ['merge', other, path, '-o', out], ['replay', path]])
        else:
            payload = mutate.data(snapshots[rng.choice(sorted(snapshots))])
            path, suffix = os.path.join(work, 'snapshot.pickle'), '.pickle'
            command = rng.choice([['import', 'torch-snapshot', path, '-o', out], ['replay', path]])
        with open(path, 'wb') as f:
            f.write(payload)
        run = subprocess.run([cli] + command, env=env, capture_output=True, timeout=120)
        codes[run.returncode] = codes.get(run.returncode, 0) + 1
        err = run.stderr.decode(errors='replace')
        if 'Sanitizer' in err or 'runtime error' in err or run.returncode < 0 or run.returncode >= 128:
            bad += 1
            kept = os.path.join(found, f'case{case}{suffix}')
            with open(kept, 'wb') as f:
                f.write(payload)
            print(f'FOUND {kept}: {command[0]} exit {run.returncode}: {err[-600:]}', flush=True)
    print(f'{cases} cases, {bad} found; exit statuses {dict(sorted(codes.items()))}')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
