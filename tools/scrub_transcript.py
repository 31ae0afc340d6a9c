#!/usr/bin/env python3
"""Scrub an imported transcript (the JSON text `harness import` wrote) by the rules of
eval/README.md "Scrubbing": home directories, e-mail addresses, strings that look like secrets.

    tools/scrub_transcript.py FILE.json [--dry-run]

Rewrites FILE in place (unless --dry-run) and prints, per rule, how many strings it replaced
and which distinct ones, so the README can say what each scrub changed. The rules work on the
JSON text: every replacement is plain ASCII without quotes or backslashes and every pattern
stops at a quote or a backslash, so the result is still the same JSON structure; the script
checks that by parsing it before it writes.
"""
import json
import re
import sys

HOME = re.compile(r'/(?:Users|home)/(?!user\b)([A-Za-z0-9._-]+)')
HOME_ENCODED = re.compile(r'-(?:Users|home)-(?!user-)([A-Za-z0-9._]+)-')
# the same path with its slashes turned into double underscores (SWE-agent EnIGMA's working dirs)
HOME_UNDERSCORED = re.compile(r'__(?:Users|home)__(?!user__)([A-Za-z0-9.-]+)__')
EMAIL = re.compile(r'(?<![A-Za-z0-9._%+-])([A-Za-z0-9][A-Za-z0-9._%+-]*)@([A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,})(?![A-Za-z0-9-])')
SECRETS = [
    ('sk- key', re.compile(r'\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{16,}')),
    ('GitHub token', re.compile(r'\bgh[pousr]_[A-Za-z0-9]{20,}')),
    ('AWS key id', re.compile(r'\bAKIA[0-9A-Z]{16}\b')),
    ('Slack token', re.compile(r'\bxox[abposr]-[A-Za-z0-9-]{10,}')),
]
ASSIGNED = re.compile(
    r'(?i)(\b(?:api[_-]?key|token|password|passwd|secret)\b["\']?\s*[:=]\s*(?:\\?["\'])?)([^\s"\'\\,;)}\]]{12,})')
URL_PASSWORD = re.compile(r'(://[^/\s:@"\'\\]+:)([^@/\s"\'\\]+)(@)')


def scrub(text):
    report = {}

    def note(rule, found):
        report.setdefault(rule, []).append(found)

    def home(m):
        note('home directory', m.group(0))
        return '/home/user'

    def home_encoded(m):
        note('encoded home directory', m.group(0))
        return '-home-user-'

    def email(m):
        local, host = m.group(1), m.group(2)
        # In JSON text an address can follow an escape (`\u003cname@host`, `\nname@host`):
        # the escape's letters are not part of the address and stay.
        keep = ''
        if m.start() > 0 and m.string[m.start() - 1] == '\\':
            n = 5 if local.startswith('u') and re.match(r'u[0-9A-Fa-f]{4}', local) else 1
            keep, local = local[:n], local[n:]
        if not re.match(r'[A-Za-z0-9]', local) or local == 'git' or local.startswith('noreply') \
                or host.startswith(('noreply.', 'users.noreply.')) or f'{local}@{host}' == 'user@example.com':
            return m.group(0)
        note('e-mail address', f'{local}@{host}')
        return keep + 'user@example.com'

    text = HOME.sub(home, text)
    text = HOME_ENCODED.sub(home_encoded, text)

    def home_underscored(m):
        note('encoded home directory', m.group(0))
        return '__home__user__'
    text = HOME_UNDERSCORED.sub(home_underscored, text)
    text = EMAIL.sub(email, text)
    for rule, pattern in SECRETS:
        def secret(m, rule=rule):
            note(rule, m.group(0))
            return '[REDACTED]'
        text = pattern.sub(secret, text)

    def assigned(m):
        if m.group(2) == '[REDACTED]':
            return m.group(0)
        note('assigned secret', m.group(0))
        return m.group(1) + '[REDACTED]'
    text = ASSIGNED.sub(assigned, text)

    def url_password(m):
        note('URL password', m.group(0))
        return m.group(1) + '[REDACTED]' + m.group(3)
    text = URL_PASSWORD.sub(url_password, text)
    return text, report


def main():
    args = [a for a in sys.argv[1:] if a != '--dry-run']
    if len(args) != 1:
        sys.exit(__doc__)
    path = args[0]
    with open(path, encoding='utf-8') as f:
        original = f.read()
    text, report = scrub(original)
    json.loads(text)  # still the same JSON document
    for rule, found in sorted(report.items()):
        distinct = sorted(set(found))
        print(f'{rule}: {len(found)} replaced; distinct: {distinct[:20]}'
              + (f' … {len(distinct)} in all' if len(distinct) > 20 else ''))
    if not report:
        print('nothing to scrub')
    if '--dry-run' not in sys.argv and text != original:
        with open(path, 'w', encoding='utf-8') as f:
            f.write(text)


if __name__ == '__main__':
    main()
