"""The command policy against every spelling of a hostile command: reading the harness's
environment through /proc, deleting relative paths after `cd /`, planting SSH keys, and
the shell forms the parser must see through (quoting, expansions, substitutions, `case`,
functions, braces). Pure checks: nothing here is run."""

from __future__ import annotations

import pytest

from tether_tools.shell import check_command

ENVIRON = "environment variables"

BLOCKED = {
    # the harness's environment through /proc, in any spelling
    "cat /proc/self/environ": ENVIRON,
    "cat /proc/$PPID/environ": ENVIRON,
    "cat /proc/${PPID}/environ": ENVIRON,
    "cat /proc/./self/environ": ENVIRON,
    "cat /proc//self//environ": ENVIRON,
    "cat /proc/self/../self/environ": ENVIRON,
    "cat /proc/*/environ": ENVIRON,
    "cat /proc/[0-9]*/environ": ENVIRON,
    "cat /proc/self/env*": ENVIRON,
    "cat /proc/self/e?viron": ENVIRON,
    "cat /proc/self/[e]nviron": ENVIRON,
    "cat /proc/self/*": ENVIRON,
    "cat /proc/self/{environ,cmdline}": ENVIRON,
    "cat /proc/self/task/1/environ": ENVIRON,
    "cat /proc/thread-self/environ": ENVIRON,
    "cat /pr''oc/self/envi\"\"ron": ENVIRON,
    "cat $'/proc/self/environ'": ENVIRON,
    "cd /proc/self && cat environ": ENVIRON,
    "cd /proc/$PPID; cat environ": ENVIRON,
    "cd /proc && cat $PPID/environ": ENVIRON,
    "cd / && cat proc/self/environ": ENVIRON,
    "cd /proc; cd self; cat env*": ENVIRON,
    "tr '\\0' '\\n' < /proc/$PPID/environ": ENVIRON,
    "xargs -0 -a /proc/1/environ echo": ENVIRON,
    "strings /proc/$PPID/environ | grep KEY": ENVIRON,
    "echo $(</proc/self/environ)": ENVIRON,
    "python3 -c \"print(open('/proc/%d/environ' % 1).read())\"": ENVIRON,
    "python3 -c \"print(open('/proc/self/environ').read())\"": ENVIRON,
    "ps e": "`ps e` shows the environment",
    "ps auxe": "`ps e` shows the environment",
    "ps axe": "`ps e` shows the environment",
    "ps eww -p $PPID": "`ps e` shows the environment",
    # `cd` first, then relative deletes
    "cd / && rm -rf *": "root of the file system",
    "cd /; rm -rf home": "a home directory",
    "cd / && rm -rf usr/lib": "system directory /usr",
    "cd / && find . -delete": "root of the file system",
    "cd ~ && rm -rf *": "a home directory",
    "cd && rm -rf .": "a home directory",
    "cd .. && cd .. && rm -rf *": "a directory above",
    "pushd / && rm -rf etc": "system directory /etc",
    'cd "$DIR" && rm -rf *': "only known when the command runs",
    "cd - && rm -rf .": "only known when the command runs",
    "cd /etc && echo x > hosts": "system directory /etc",
    "cd /etc && touch cron.d/job": "system directory /etc",
    # planting SSH keys
    "echo ssh-ed25519 AAAA me >> ~/.ssh/authorized_keys": "SSH access",
    "cat key.pub >> $HOME/.ssh/authorized_keys": "SSH access",
    "echo 'Host *' > ~/.ssh/config": "SSH access",
    "tee -a ~/.ssh/authorized_keys < key.pub": "SSH keys",
    "cp key.pub /root/.ssh/authorized_keys": "SSH keys",
    # parser forms around `rm -rf /`
    "case $x in a) rm -rf / ;; esac": "root of the file system",
    "case x in *) rm -rf ~ ;; esac": "a home directory",
    "f() { rm -rf ~; }; f": "a home directory",
    "function g { rm -rf /; }": "root of the file system",
    "if true; then rm -rf /; fi": "root of the file system",
    "while false; do rm -rf ~; done": "a home directory",
    "until true; do rm -rf /; done": "root of the file system",
    "for d in a b; do rm -rf /$d; done": "only known when the command runs",
    "[[ -d x ]] && rm -rf /": "root of the file system",
    "! rm -rf /": "root of the file system",
    "time rm -rf /": "root of the file system",
    "coproc rm -rf /": "root of the file system",
    "a=1 b=2 rm -rf /": "root of the file system",
    "rm -rf ${X:-/}": "only known when the command runs",
    'rm -rf "${HOME}"': "a home directory",
    "rm -rf ${HOME}/": "a home directory",
    "rm -rf $'/'": "root of the file system",
    "$'rm' -rf /": "root of the file system",
    "$'\\162\\155' -rf /": "root of the file system",
    "r\\m -rf /": "root of the file system",
    "rm -rf $((0))": "only known when the command runs",
    "x=$(rm -rf /)": "root of the file system",
    "echo `rm -rf ~`": "a home directory",
    'echo "`rm -rf /`"': "root of the file system",
    "cat <(rm -rf ~)": "a home directory",
    "declare X=/; rm -rf $X": "root of the file system",
    "export X=~; rm -rf $X": "a home directory",
    "local Y=/ ; rm -rf $Y": "root of the file system",
    "rm -rf {/,x}": "root of the file system",
    "ls # comment\nrm -rf ~": "a home directory",
    "cat <<EOF\nhello\nEOF\nrm -rf /": "root of the file system",
    "rm -rf / &>/dev/null": "root of the file system",
    'echo "a \\" b"; rm -rf /': "root of the file system",
    "$'\\u0072\\u006d' -rf /": "root of the file system",
    "$'\\U00000072m' -rf /": "root of the file system",
    "rm -rf ${X:-$(echo /)}": "only known when the command runs",
    "echo ${X:-`rm -rf /`}": "root of the file system",
    "echo `echo \\`rm -rf /\\``": "root of the file system",
    "echo $(echo 'a)b'; rm -rf ~)": "a home directory",
    'echo $(echo "a)b"; rm -rf /)': "root of the file system",
    "f ( ) { rm -rf /; }": "root of the file system",
    # what cannot be parsed cannot be checked, so it is refused
    "echo ${X": "could not be parsed",
    "echo `echo hi": "could not be parsed",
    "(echo hi": "could not be parsed",
    "echo hi)": "could not be parsed",
    "function": "could not be parsed",
    "case x in a) echo": "could not be parsed",
    "{ echo hi": "could not be parsed",
    "rm -rf /{usr,tmp/x}": "system directory /usr",
}

ALLOWED = [
    "ps aux",
    "ps -ef",
    "ps -o pid,comm",
    "cat /proc/cpuinfo",
    "cat /proc/self/status",
    "ls /proc/self",
    "cat /proc/*/cmdline",
    "cd build && rm -rf *",
    "cd /tmp/work-1 && rm -rf *",
    "cd / && rm -rf tmp/work-1",
    "cd src && cat environ.py",
    "cat env.txt",
    "grep -rn environ docs",
    "cd sub && make -j2 && cd .. && rm -rf dist",
    "case $x in a) echo a ;; *) echo other ;; esac",
    "f() { echo hi; }; f",
    "echo $'a\\nb'",
    "echo $((1+2))",
    "echo `date`",
    "rm -rf {build,dist}",
    "for f in *.py; do echo $f; done",
    "echo hi # rm -rf /",
    "cat <<'EOF' > out.txt\n$(rm -rf /)\nEOF",
    "make &> build.log",
    'echo "line\\\ncontinued"',
    "echo $'\\cA' $'\\q'",
    "echo $$ $? $! $",
    "echo a\\\nb",
]


@pytest.mark.parametrize(("command", "why"), list(BLOCKED.items()))
def test_blocked(command: str, why: str) -> None:
    decision = check_command(command)
    assert not decision.allowed, command
    assert why in decision.reason, decision.reason


@pytest.mark.parametrize("command", ALLOWED)
def test_allowed(command: str) -> None:
    decision = check_command(command)
    assert decision.allowed, decision.reason
