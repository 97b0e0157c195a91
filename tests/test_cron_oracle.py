#!/usr/bin/env python3
"""claimd's cron (src/common/cron.c, tzfile.c) against python3-croniter as an oracle.

Random 5-field expressions (lists, ranges, steps, names, both day fields), random start times
from 1990 to 2037 and several zones; for each, the next times claimd's cron_next gives (through
tests/cron_next) must be the ones croniter gives. croniter is asked for the wall-clock times
after the wall-clock reading of the start, and Python's zoneinfo turns them into UTC: so the
expression's arithmetic is checked against croniter and the zone's offsets against zoneinfo. A
case where one of those wall-clock times is skipped or shown twice by the zone's clock is not
compared (claimd's rules for those are checked case by case in test_cron.c) and is counted
apart. Where croniter differs, a plain day-by-day, minute-by-minute search (written here from
the definition) decides: croniter 1.3.5 has bugs of its own ('*/5' in the day of the month
skips days after a month's end; '31 2 */3' gives nothing). Where neither fires, that search
must find nothing either. Fails if any compared case disagrees with both, if croniter differs
in more than 1% of them, if fewer than 90% could be compared, or if an expression both call
never-firing fires.

    tests/test_cron_oracle.py BUILD/tests/cron_next [CASES]
"""
import datetime
import os
import random
import subprocess
import sys

try:
    import croniter
except ImportError:  # a Python other than Debian's, with the package installed for Debian's
    sys.path.append("/usr/lib/python3/dist-packages")
    try:
        import croniter
    except ImportError:
        print("SKIP: python3-croniter is not installed (tools/setup-debian --test installs it)")
        sys.exit(77)
from zoneinfo import ZoneInfo

ZONES = ["UTC", "Europe/Berlin", "America/New_York", "Asia/Kolkata", "Australia/Lord_Howe",
         "America/Sao_Paulo", "Pacific/Chatham", "Asia/Kathmandu"]
MONTHS = "jan feb mar apr may jun jul aug sep oct nov dec".split()
DAYS = "sun mon tue wed thu fri sat".split()
FIELDS = [(0, 59), (0, 23), (1, 31), (1, 12), (0, 6)]
NEXT = 4
HORIZON_S = 30 * 365 * 86400   # cron.h's CRON_HORIZON_YEARS, its leap days left out


def item(rng, f):
    lo, hi = FIELDS[f]
    def val(v):
        if f == 3 and rng.random() < 0.3:
            return MONTHS[v - 1]
        if f == 4 and rng.random() < 0.3:
            return DAYS[v]
        return str(v)
    kind = rng.random()
    if kind < 0.35:
        return val(rng.randint(lo, hi))
    if kind < 0.55:
        a = rng.randint(lo, hi)
        b = rng.randint(a, hi)
        return val(a) + "-" + val(b)
    if kind < 0.75:
        return "*/" + str(rng.randint(1, max(1, (hi - lo) // 2)))
    if kind < 0.9:
        a = rng.randint(lo, hi)
        b = rng.randint(a, hi)
        return "%s-%s/%d" % (val(a), val(b), rng.randint(1, max(1, hi - lo)))
    return "%d/%d" % (rng.randint(lo, hi), rng.randint(1, max(1, (hi - lo) // 2)))


def field(rng, f):
    if rng.random() < (0.5 if f >= 2 else 0.25):
        return "*"
    return ",".join(item(rng, f) for _ in range(rng.choice([1, 1, 1, 2, 3])))


def expression(rng):
    return " ".join(field(rng, f) for f in range(5))


def unique(w, tz):
    """Whether the wall-clock time w shows once on the zone's clock (not skipped, not repeated)."""
    a, b = w.replace(tzinfo=tz, fold=0), w.replace(tzinfo=tz, fold=1)
    if a.utcoffset() != b.utcoffset():
        return False
    return a.astimezone(datetime.timezone.utc).astimezone(tz).replace(tzinfo=None) == w


def oracle(expr, zone, after):
    """croniter's next wall-clock times after the wall-clock reading of after, as UTC seconds
    by zoneinfo; None where after or one of the times is not unique on the zone's clock."""
    tz = ZoneInfo(zone)
    start = datetime.datetime.fromtimestamp(after, tz).replace(tzinfo=None)
    if not unique(start, tz):
        return None
    it = croniter.croniter(expr, start)
    out = []
    for _ in range(NEXT):
        try:
            w = it.get_next(datetime.datetime)
        except Exception:  # croniter gives up (an expression that never fires)
            break
        if not unique(w, tz):
            return None
        out.append(int(w.replace(tzinfo=tz).timestamp()))
    return out


NAMES = {3: MONTHS, 4: DAYS}


def expand(text, f):
    """The values field f allows, by the definition (an implementation apart from claimd's)."""
    lo, hi = FIELDS[f]
    top = 7 if f == 4 else hi
    out = set()
    for part in text.split(","):
        rng, _, step = part.partition("/")
        step = int(step) if step else 1
        def num(v):
            return NAMES[f].index(v.lower()) + (1 if f == 3 else 0) if v.isalpha() else int(v)
        if rng == "*":
            a, b = lo, hi
        elif "-" in rng:
            a, b = (num(v) for v in rng.split("-"))
        else:
            a = num(rng)
            b = top if step > 1 or part.endswith("/1") else a
        out.update(0 if (f == 4 and v == 7) else v for v in range(a, b + 1, step))
    return out


def brute(expr, wall, count):
    """The next count wall-clock times after wall, day by day and minute by minute."""
    fs = [expand(t, i) for i, t in enumerate(expr.split())]
    every_md, every_wd = fs[2] == set(range(1, 32)), fs[4] == set(range(7))
    out = []
    day = wall.date()
    for _ in range(366 * 31):
        wd = (day.weekday() + 1) % 7
        md_ok, wd_ok = day.day in fs[2], wd in fs[4]
        ok = (md_ok and wd_ok) if (every_md or every_wd) else (md_ok or wd_ok)
        if day.month in fs[3] and ok:
            for h in sorted(fs[1]):
                for m in sorted(fs[0]):
                    w = datetime.datetime(day.year, day.month, day.day, h, m)
                    if w > wall:
                        out.append(w)
                        if len(out) == count:
                            return out
        day += datetime.timedelta(days=1)
    return out


def brute_utc(expr, zone, after):
    tz = ZoneInfo(zone)
    start = datetime.datetime.fromtimestamp(after, tz).replace(tzinfo=None)
    return [int(w.replace(tzinfo=tz).timestamp()) for w in brute(expr, start, NEXT)]


def main():
    tool = sys.argv[1]
    cases = int(sys.argv[2]) if len(sys.argv) > 2 else 4000
    rng = random.Random(int(os.environ.get("CRON_ORACLE_SEED", "20261125")))
    lines, meta = [], []
    for _ in range(cases):
        expr = expression(rng)
        zone = rng.choice(ZONES)
        after = rng.randint(631152000, 2114380800)  # 1990 .. 2037
        lines.append("%s\t%d\t%d\t%s\n" % (zone, after, NEXT, expr))
        meta.append((expr, zone, after))
    out = subprocess.run([tool], input="".join(lines), capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert len(out) == len(meta), "cron_next answered %d lines for %d" % (len(out), len(meta))
    compared = agreed = near = never = 0
    bad, oracle_wrong = [], []
    for (expr, zone, after), line in zip(meta, out):
        assert not line.startswith("error"), "claimd refused %r: %s" % (expr, line)
        ours = [int(x) for x in line.split()]
        theirs = oracle(expr, zone, after)
        if theirs is None:
            near += 1
            continue
        if not theirs and not ours:
            # Neither fires: the day-by-day search must find no time either, within the 30
            # years claimd looks ahead (CRON_HORIZON_YEARS).
            found = [w for w in brute_utc(expr, zone, after) if w - after < HORIZON_S]
            if found:
                bad.append((expr, zone, after, ours, theirs))
                print("NEVER %r in %s after %d: neither claimd nor croniter fires, the "
                      "day-by-day search does: %s" % (expr, zone, after, found))
            else:
                never += 1
            continue
        compared += 1
        if ours == theirs:
            agreed += 1
        elif brute_utc(expr, zone, after) == ours:
            oracle_wrong.append((expr, zone, after, ours, theirs))
        else:
            bad.append((expr, zone, after, ours, theirs))
    for expr, zone, after, ours, theirs in bad[:10]:
        print("DISAGREE %r in %s after %d: claimd %s, croniter %s" % (expr, zone, after, ours,
                                                                     theirs))
    for expr, zone, after, ours, theirs in oracle_wrong:
        print("croniter differs, the day-by-day search agrees with claimd: %r in %s after %d: "
              "claimd %s, croniter %s" % (expr, zone, after, ours, theirs))
    print("cron oracle: %d cases, %d compared, %d agreed with croniter, %d where croniter "
          "differs and a day-by-day search agrees with claimd, %d near a clock change (not "
          "compared), %d never fire (the day-by-day search agrees)" % (cases, compared, agreed, len(oracle_wrong), near, never))
    if len(oracle_wrong) > 0.01 * compared:
        print("croniter differs too often for its differences to be its own")
        sys.exit(1)
    if bad:
        sys.exit(1)
    if compared < 0.9 * (cases - never):
        print("too few cases compared")
        sys.exit(1)
    # A few parse refusals both sides agree on.
    for expr in ["61 * * * *", "* 24 * * *", "* * 0 * *", "* * * 13 *", "* * * * 8",
                 "5-1 * * * *", "* * * *", "*/0 * * * *", "* * * * * *"]:
        r = subprocess.run([tool], input="UTC\t0\t1\t%s\n" % expr, capture_output=True,
                           text=True, check=True).stdout
        assert r.startswith("error"), "claimd took %r: %s" % (expr, r)
        try:
            croniter.croniter(expr).get_next()
            print("note: croniter takes %r" % expr)
        except Exception:
            pass


if __name__ == "__main__":
    main()
