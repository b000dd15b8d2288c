"""The verdict type and the table of every rule id the classifier can return.

Each rule id has exactly one classification and tier, so an audit row that records a rule id
can always be explained from this table alone (docs/safety.md prints it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final, Literal

Classification = Literal["SAFE", "RISKY", "FORBIDDEN"]

#: Bump whenever a rule changes meaning; approvals are bound to (command hash, this version).
CLASSIFIER_VERSION: Final = "ghost-safety-2026.3"


@dataclass(frozen=True)
class Rule:
    """One row of the rule table."""

    rule_id: str
    classification: Classification
    tier: int
    meaning: str


@dataclass(frozen=True)
class Verdict:
    """The gate's decision about one command line."""

    classification: Classification
    tier: int
    rule: str
    reason: str
    classifier_version: str = CLASSIFIER_VERSION
    argv: tuple[str, ...] | None = None

    @property
    def is_safe(self) -> bool:
        return self.classification == "SAFE"


def _r(rule_id: str, classification: Classification, meaning: str) -> Rule:
    tier = int(rule_id[1])
    return Rule(rule_id, classification, tier, meaning)


_F: Final = "FORBIDDEN"
_R: Final = "RISKY"
_S: Final = "SAFE"

_RULE_LIST: Final[tuple[Rule, ...]] = (
    # Tier 0: never run, whatever a human says.
    _r("T0.metadata_endpoint", _F, "targets the cloud instance metadata service (IMDS) "
       "169.254.169.254 / fd00:ec2::254 in any spelling"),
    _r("T0.identity_endpoint", _F, "names a managed-identity token endpoint "
       "(IDENTITY_ENDPOINT, MSI_ENDPOINT, /msi/token, /metadata/identity, Arc and Cloud Shell "
       "ports 40342 / 50342)"),
    _r("T0.metadata_header", _F, "sends the `Metadata: true` header that IMDS requires"),
    _r("T0.wireserver", _F, "talks to the Azure WireServer 168.63.129.16 with something other "
       "than a DNS lookup or ICMP probe (it serves VM agent goal state and extension secrets)"),
    _r("T0.credential_store", _F, "names or copies a local credential store, found by "
       "location class (any token or secret file, *.key, private/, .ssh/, keytabs, shadow, "
       "kubelet and VM agent state, cloud-init user data, process environments, a directory "
       "that holds them)"),
    _r("T0.privilege_escalation", _F, "runs as another user or gains privileges (sudo, doas, "
       "su, setuid bits, setcap), changes accounts, groups, passwords or sudo rights, or plants "
       "persistence (authorized_keys, ld.so.preload, cron, at, systemd units, start-up files)"),
    _r("T0.assembled_command", _F, "a command assembled at run time so its text is not what "
       "runs (brace expansion, ANSI-C escapes, ${VAR%...}, a glob or expansion as the program, "
       "~user, backslash-newline)"),
    _r("T0.exploit_payload", _F, "carries an exploit payload (Shellshock `() {`, Log4Shell "
       "`${jndi:`, OGNL/Spring class-loader strings)"),
    _r("T0.host_destruction", _F, "destroys disks, volumes or the network of the host (hdparm "
       "erase, nvme format/sanitize, lvremove, cryptsetup erase, mdadm, a firewall flush, a "
       "default-drop policy or a rule that drops a whole chain, a route or address flush)"),
    _r("T0.script_engine", _F, "runs a script inside a network tool (tshark -X lua_script, "
       "nmap --script/-sC/-A)"),
    _r("T0.rm_root", _F, "deletes / or a top-level system or home directory"),
    _r("T0.disk_format", _F, "formats, wipes, repartitions or repairs a disk or volume"),
    _r("T0.raw_device_write", _F, "writes to a raw block device (dd of=/dev/..., > /dev/sda)"),
    _r("T0.raw_device", _F, "names a disk, memory or port device (reading one copies the "
       "data on it, writing one destroys it)"),
    _r("T0.power", _F, "shuts down, reboots, suspends the host or changes its runlevel, or "
       "signals PID 1 or every process (also through systemd units, telinit, loginctl, busctl, "
       "sysctl settings that panic or run programs)"),
    _r("T0.fork_bomb", _F, "defines a self-replicating shell function (fork bomb)"),
    _r("T0.perm_root", _F, "recursive chmod/chown of / or a top-level system directory"),
    _r("T0.reverse_shell", _F, "opens a remote shell (/dev/tcp, nc -e, socat exec/system/shell, "
       "an interpreter wiring a socket to a process, nc inside ProxyCommand or sshCommand)"),
    _r("T0.pipe_to_shell", _F, "feeds data to a shell or interpreter (a pipe through any "
       "wrapper, `bash < <(curl ...)`, `eval \"$(...)\"`)"),
    _r("T0.tcpdump_exec", _F, "tcpdump -z runs an arbitrary program on rotated files"),
    _r("T0.unreadable_text", _F, "text the gate cannot read as one command: non-ASCII or "
       "control characters, a comment, unbalanced quotes, a quoted program name, more than "
       "4096 characters"),
    _r("T0.compound_command", _F, "more than one command (;, &&, ||, &, a subshell): Ghost "
       "runs one command at a time"),
    _r("T0.not_literal", _F, "an argument a shell would change at run time ($VAR, $( ), "
       "backticks, backslash escapes, a leading ~, an unquoted glob that would name files)"),
    _r("T0.redirection", _F, "redirects input or output anywhere but Ghost's data directory "
       "(or /dev/null), or feeds a here-document"),
    _r("T0.interpreting_pipe", _F, "pipes into a program that is not a known text filter (a "
       "shell, an interpreter, awk, sed e, xargs, parallel, ssh, an exec -i, an unknown "
       "program)"),
    _r("T0.runs_programs", _F, "a program that runs other programs, scripts or command lines "
       "(wrappers, interpreters, editors, find -exec, ProxyCommand, --to-command, an unknown "
       "program given a program or a script), or reads its orders from a file the gate cannot "
       "see"),
    _r("T0.disguised_program", _F, "the program is named by a path or after VAR=value "
       "(LD_PRELOAD, PATH): it may not be the program it looks like"),
    _r("T0.protected_write", _F, "writes to a device, /etc, /boot, /proc, /sys, the system's "
       "program directories, cron, agent or kubelet state, start-up files or .ssh; or a "
       "destructive target spelled with .. or //"),
    _r("T0.not_understood", _F, "a known program in a form the gate does not know (an "
       "unknown docker or kubectl subcommand), or an unknown program in a pipeline"),
    _r("T0.az_token", _F, "mints or prints an access token (get-access-token, --expose-token)"),
    _r("T0.az_credentials", _F, "creates, resets, reads or downloads credentials "
       "(sp create-for-rbac, credential reset, federated credentials, aks get-credentials, vm "
       "user update, az rest of a list* credential action)"),
    _r("T0.az_remote_exec", _F, "runs code on a remote machine (run-command, resource "
       "invoke-action, custom script extension, aks command invoke, container exec, ssh)"),
    _r("T0.az_group_delete", _F, "deletes a whole resource group"),
    _r("T0.az_rest_write", _F, "az rest with a method that changes state (PUT, POST, PATCH, "
       "DELETE) or a request body"),
    _r("T0.az_secret_argument", _F, "passes a password, key, SAS token, client secret or "
       "connection string on the az command line"),
    _r("T0.az_not_approvable", _F, "an az command that changes state outside the approvable "
       "list (network resources, VM power, packet captures and their blobs, the run-command "
       "probes), an unknown verb, an option before the command or an @file value"),
    # Tier 1: allowlisted programs.
    _r("T1.allowed", _S, "allowlisted diagnostic program with allowlisted options only"),
    _r("T1.unknown_option", _R, "an option of an allowlisted program that is not on its allowlist"),
    _r("T1.bad_value", _R, "an option value or argument that fails validation"),
    _r("T1.bad_target", _R, "a host, URL or address that is not a plain host name or IP"),
    _r("T1.loopback_target", _R, "targets loopback, link-local or unspecified addresses "
       "(local services such as the Arc IMDS on localhost:40342)"),
    _r("T1.end_of_options", _R, "uses `--`, which changes how later words are parsed"),
    _r("T1.writes_file", _R, "an option that writes a local file"),
    _r("T1.reads_file", _R, "an option that reads a local file (config, batch, keys, filters)"),
    _r("T1.sends_data", _R, "an option that uploads or sends a request body"),
    _r("T1.state_change", _R, "an option or subcommand that changes host or socket state"),
    _r("T1.flood", _R, "flood or unbounded-rate probing"),
    _r("T1.unbounded", _R, "a probe or capture with no count or time bound"),
    _r("T1.interactive", _R, "a mode that reads commands interactively"),
    _r("T1.payload_dump", _R, "prints packet payloads or verbose protocol decodes, which may "
       "carry credentials"),
    _r("T1.host_capture", _R, "a packet capture on the host: it shows the contents of traffic"),
    _r("T1.curl_method", _R, "an HTTP method other than GET or HEAD"),
    _r("T1.curl_header", _R, "a request header outside the harmless allowlist"),
    _r("T1.curl_scheme", _R, "a URL scheme other than http(s), or no explicit scheme"),
    _r("T1.curl_credentials", _R, "sends credentials (user:pass@ in URL, -u, --oauth2-bearer)"),
    _r("T1.curl_url_glob", _R, "curl URL globbing ([] or {}) expands into many requests"),
    _r("T1.curl_next", _R, "--next / -: starts a second, unchecked request"),
    _r("T1.path_outside_data_dir", _R, "a file path that resolves outside the audit/data dir"),
    _r("T1.no_data_dir", _R, "a file-reading command while no data directory is configured"),
    # Tier 2: az.
    _r("T2.az_read", _S, "an az read on the list of reads known to return no secrets, with "
       "selector options only"),
    _r("T2.az_unlisted_read", _R, "an az read that is not on the list of reads known to return "
       "no secrets"),
    _r("T2.az_unknown_option", _R, "an option that is not a selector allowed on a clean az "
       "read (it may make the read return secrets)"),
    _r("T2.az_secret_read", _R, "az read that returns keys, secrets, SAS tokens, "
       "connection strings, credentials or app settings"),
    _r("T2.az_vm_probe", _R, "az vm run-command invoke of read-only probes (ss, ip, dig, "
       "nslookup, ping, nc -z, curl GET, top -b …) inside a VM; any other script is T0"),
    _r("T2.az_rest", _R, "az rest GET of an ARM or Graph URL (no body, no credential action)"),
    _r("T2.az_mutating_verb", _R, "an az change on the approvable list: network resources, VM "
       "power, packet captures and their blobs, flow logs"),
    _r("T2.az_debug", _R, "--debug prints raw HTTP traffic"),
    # Tier 3: understood shapes an engineer approves.
    _r("T3.empty", _R, "empty command"),
    _r("T3.invalid_input", _R, "a `ghost classify --json -` line that holds no command string "
       "(not JSON, no \"command\" key, not a string); reported, never SAFE"),
    _r("T3.unquoted_pattern", _R, "an unquoted *, ?, [ ] or { } in a value for a program that "
       "reads it as text (az, dig, tcpdump, ss): the same command quoted can be SAFE"),
    _r("T3.pipeline", _R, "one command piped into known text filters (grep, head, sort, jq "
       "...), or with its output redirected into Ghost's data directory"),
    _r("T3.host_read", _R, "a program the gate knows only reads the host (ls, ps, journalctl, "
       "systemctl status ...), in a form not on the SAFE list"),
    _r("T3.destructive_program", _R, "a program that deletes, moves or changes files, "
       "processes, services or firewall state, with targets outside system locations"),
    _r("T3.network_tool", _R, "a general network client or server (nc, wget, openssl, nmap)"),
    _r("T3.unknown_program", _R, "a program the gate does not know, as one simple command "
       "with literal arguments"),
)

#: rule id -> Rule, for docs, audit and the approval UI.
RULES: Final[dict[str, Rule]] = {r.rule_id: r for r in _RULE_LIST}


#: Every FORBIDDEN reason starts with this and says what to do instead (issue 28).
FORBIDDEN_PREFIX: Final = "Ghost will not offer this for approval: "
FORBIDDEN_ASK: Final = "ask the engineer to run it themselves"
_REFUSED_RE: Final = re.compile(r"^Refused(?: \([A-Za-z0-9_.]{1,40}\))?: ")
_NEVER_RE: Final = re.compile(r"\.?[ ]*(?:This is never|Never) allowed, even with approval\.?")


def forbidden_reason(reason: str) -> str:
    """One wording for every refusal: what the command would do, then what to do instead.

    The model reads this text and acts on it, so every FORBIDDEN reason begins with
    FORBIDDEN_PREFIX and ends with a way forward; the engineer running the command themselves is
    always one (a reason that already says how to rewrite the command keeps that advice first).
    """
    text = _REFUSED_RE.sub("", reason.strip(), count=1)
    text = _NEVER_RE.sub("", text).strip()
    if text.startswith(FORBIDDEN_PREFIX):
        text = text[len(FORBIDDEN_PREFIX):]
    text = text.rstrip(" .;")
    if FORBIDDEN_ASK not in text:
        text += f"; {FORBIDDEN_ASK}" if "; " not in text else f" (or {FORBIDDEN_ASK})"
    return f"{FORBIDDEN_PREFIX}{text}."


def make_verdict(rule_id: str, reason: str, argv: tuple[str, ...] | None = None) -> Verdict:
    """Build a verdict whose classification and tier come from the rule table."""
    rule = RULES[rule_id]
    if rule.classification == "FORBIDDEN":
        reason = forbidden_reason(reason)
    return Verdict(rule.classification, rule.tier, rule_id, reason, CLASSIFIER_VERSION, argv)
