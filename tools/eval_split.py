#!/usr/bin/env python3
"""Write eval/split by the rule of eval/README.md "The split".

    tools/eval_split.py [EVAL_DIR] > EVAL_DIR/split

Per agent (the prefix of the transcript's name), the transcripts sorted by the first 8 hex
digits of SHA-256 of their name; positions 0, 3, 6, ... are test, the others dev. The rule
depends on the names only, never on a score.
"""
import glob
import hashlib
import os
import sys

PREFIXES = ['mini-swe-agent-', 'claude-code-', 'codex-', 'openhands-', 'swe-agent-']


def agent(name):
    for prefix in PREFIXES:  # mini-swe-agent- before swe-agent-: the longer prefix first
        if name.startswith(prefix):
            return prefix[:-1]
    sys.exit(f'{name}: no agent prefix ({", ".join(PREFIXES)})')


def main():
    directory = sys.argv[1] if len(sys.argv) > 1 else 'eval'
    names = sorted(os.path.basename(f)[:-len('.json')]
                   for f in glob.glob(os.path.join(directory, '*.json'))
                   if not f.endswith('.facts.json'))
    groups = {}
    for name in names:
        groups.setdefault(agent(name), []).append(name)
    split = {}
    for members in groups.values():
        members.sort(key=lambda n: hashlib.sha256(n.encode()).hexdigest()[:8])
        for position, name in enumerate(members):
            split[name] = 'test' if position % 3 == 0 else 'dev'
    print('# The held-out split (eval/README.md "The split"), written by tools/eval_split.py: per')
    print('# agent, the transcripts sorted by the first 8 hex digits of SHA-256 of their name;')
    print('# positions 0, 3, 6, ... are test, the others dev.')
    for name in names:
        print(f'{split[name]} {name}')


if __name__ == '__main__':
    main()
