"""--baseline REV: claimd as it was at a git revision, built by the bench into OUT/baseline
(the revision's tree from `git archive`, its own meson build dir), so that the sections can
run it beside this build in the same run."""

import os
import shutil
import subprocess

from .common import ROOT, BenchError, log


class Baseline:
    """The built revision: its binaries, and its tree's schema (sql/migrations), which the
    bench loads into a database of its own (DATABASE): a schema change since the baseline
    (migration 012 made claimed_by and claimed_at generated columns, which the claims of
    the revisions before it write) must not make the baseline fail, nor run on a schema it
    was not made for."""
    DATABASE = 'claimd_baseline'

    def __init__(self, rev, commit, claimd, claimctl, src):
        self.rev, self.commit, self.claimd, self.claimctl = rev, commit, claimd, claimctl
        self.migrations = os.path.join(src, 'sql', 'migrations')
        self.dsn = None   # set once its database is made (Db.make_database)


def build(out, rev, no_build=False):
    """The baseline's binaries, built from rev (reused when already built for the same
    commit). Raises BenchError with why it could not be."""
    r = subprocess.run(['git', 'rev-parse', '--verify', '--quiet', rev + '^{commit}'], cwd=ROOT,
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise BenchError('--baseline %s: not a commit of this repository' % rev)
    commit = r.stdout.strip()
    base = os.path.join(out, 'baseline')
    src, bld = os.path.join(base, 'src'), os.path.join(base, 'build')
    stamp = os.path.join(base, 'commit')
    claimd, claimctl = os.path.join(bld, 'claimd'), os.path.join(bld, 'claimctl')
    same = os.path.exists(stamp) and open(stamp).read().strip() == commit
    if same and os.access(claimd, os.X_OK) and (no_build or _ninja(bld) is None):
        return Baseline(rev, commit, claimd, claimctl, src)
    if no_build:
        raise BenchError('--baseline %s with --no-build: not built in %s' % (rev, bld))
    log('baseline: building %s (%s) in %s' % (rev, commit[:10], base))
    shutil.rmtree(base, ignore_errors=True)
    os.makedirs(src)
    archive = subprocess.Popen(['git', 'archive', '--format=tar', commit], cwd=ROOT,
                               stdout=subprocess.PIPE)
    tar = subprocess.run(['tar', '-x', '-C', src], stdin=archive.stdout, capture_output=True)
    archive.stdout.close()
    if archive.wait() != 0 or tar.returncode != 0:
        raise BenchError('--baseline %s: git archive | tar failed: %s'
                         % (rev, tar.stderr.decode(errors='replace')[-500:]))
    r = subprocess.run(['meson', 'setup', bld, src, '-Dbuildtype=debugoptimized'],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise BenchError('--baseline %s: meson setup failed: %s' % (rev, r.stdout[-1500:]))
    why = _ninja(bld)
    if why:
        raise BenchError('--baseline %s: %s' % (rev, why))
    with open(stamp, 'w') as f:
        f.write(commit + '\n')
    return Baseline(rev, commit, claimd, claimctl, src)


def _ninja(bld):
    r = subprocess.run(['ninja', '-C', bld, 'claimd', 'claimctl'], capture_output=True, text=True)
    if r.returncode != 0:
        return 'build failed: ' + (r.stdout + r.stderr)[-1500:]
    return None
