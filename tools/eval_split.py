#!/usr/bin/env python3
"""Write eval/split by the rule of eval/README.md "The split".

    tools/eval_split.py [EVAL_DIR] > EVAL_DIR/split

Per agent (the prefix of the transcript's name), the transcripts sorted by the first 8 hex
digits of SHA-256 of their name; positions 0, 3, 6, ... are test, the others dev. The rule
depends on the names only, never on a score.

A transcript EVAL_DIR/split already names keeps its side: applying the rule to all of them
again would move held-out transcripts into dev once they may have been looked at. The
transcripts it does not name are assigned by the same rule among themselves, per agent.
"""
import glob
import hashlib
import os
import sys

PREFIXES = ['mini-swe-agent-', 'claude-code-', 'codex-', 'gemini-cli-', 'openhands-', 'swe-agent-']


def agent(name):
    for prefix in PREFIXES:  # mini-swe-agent- before swe-agent-: the longer prefix first
        if name.startswith(prefix):
            return prefix[:-1]
    sys.exit(f'{name}: no agent prefix ({", ".join(PREFIXES)})')


def existing_split(directory):
    """The sides EVAL_DIR/split assigns, by name (empty when there is no such file)."""
    sides = {}
    path = os.path.join(directory, 'split')
    if not os.path.exists(path):
        return sides
    with open(path, encoding='utf-8') as f:
        for line in f:
            words = line.split()
            if not words or words[0].startswith('#'):
                continue
            if len(words) != 2 or words[0] not in ('test', 'dev'):
                sys.exit(f'{path}: not "test NAME" or "dev NAME": {line.rstrip()}')
            sides[words[1]] = words[0]
    return sides


def main():
    directory = sys.argv[1] if len(sys.argv) > 1 else 'eval'
    kept = existing_split(directory)
    names = sorted(os.path.basename(f)[:-len('.json')]
                   for f in glob.glob(os.path.join(directory, '*.json'))
                   if not f.endswith('.facts.json'))
    groups = {}
    for name in names:
        if name not in kept:
            groups.setdefault(agent(name), []).append(name)
    split = {name: side for name, side in kept.items() if name in names}
    for members in groups.values():
        members.sort(key=lambda n: hashlib.sha256(n.encode()).hexdigest()[:8])
        for position, name in enumerate(members):
            split[name] = 'test' if position % 3 == 0 else 'dev'
    print('# The held-out split (eval/README.md "The split"), written by tools/eval_split.py: per')
    print('# agent, the transcripts sorted by the first 8 hex digits of SHA-256 of their name;')
    print('# positions 0, 3, 6, ... are test, the others dev. A transcript this file already named')
    print('# keeps its side; the ones added later are assigned by the rule among themselves.')
    for name in names:
        print(f'{split[name]} {name}')


if __name__ == '__main__':
    main()
