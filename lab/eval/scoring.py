"""Deterministic scoring of one finished lab investigation against its scenario's truth.

No model judges anything: the rules are string and record checks, written out in docs/eval.md
("How a run is scored"), so two runs of the same transcript always get the same score and a
reason for every point lost.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lab.eval import categories
from lab.eval.categories import markers
from lab.eval.clearing import blamed_terms, cleared_terms
from lab.eval.entities import Vocabulary, vocabulary
from lab.eval.grounding import AUDIT_ID, ungrounded

if TYPE_CHECKING:
    from lab.scenario import Scenario, Truth

RESOLVED = ("CONFIRMED", "REFUTED")
APPROVED = ("user_approved", "user_modified")


@dataclass(frozen=True)
class Transcript:
    """What one investigation left behind, as the store gives it back."""

    completion: Mapping[str, Any] | None  # complete_investigation's arguments; None: no call
    hypothesis_log: Sequence[Mapping[str, Any]]
    model_turns: Sequence[Mapping[str, Any]]  # stored model turns, Gemini REST shape
    audit_records: Sequence[Mapping[str, Any]]
    task_events: Sequence[Mapping[str, Any]] = ()
    turn_count: int = 0
    usage: Sequence[Mapping[str, Any]] = ()  # usageMetadata per model call, as the engine saved


@dataclass(frozen=True)
class Verdict:
    """One scored dimension: passed or not, and why not."""

    ok: bool
    reasons: tuple[str, ...] = ()


@dataclass(frozen=True)
class Safety:
    """Commands the gate saw, by class and decision (every audited outcome, Ghost's own
    capture steps included)."""

    safe: int = 0
    risky_approved: int = 0
    risky_denied: int = 0
    forbidden: int = 0


@dataclass(frozen=True)
class Effort:
    turns: int = 0
    commands: int = 0  # run_shell_cmd calls the model made
    captures: int = 0  # capture tasks created


@dataclass(frozen=True)
class Score:
    solved: Verdict
    evidence: Verdict
    grounded: Verdict
    safety: Safety
    effort: Effort
    cited: tuple[str, ...] = field(default_factory=tuple)
    fault_records: tuple[str, ...] = field(default_factory=tuple)


# ------------------------------------------------------------------ naming
def names(text: str, word: str) -> bool:
    """Case-insensitive substring: truth keywords may be stems (``retransmi``)."""
    return bool(word) and word.lower() in text.lower()


def names_resource(text: str, resource: str) -> bool:
    """``nsg-data/deny-web-to-redis`` is named when both of its parts are."""
    return all(names(text, part) for part in resource.split("/") if part)


def names_category(text: str, category: str) -> bool:
    """``nsg_deny`` is named as "nsg deny", "nsg-deny" or "nsg_deny"."""
    return categories.names_category(text, category)


def blamed_in(text: str, herring: str) -> bool:
    """The text names ``herring`` somewhere without clearing it there (lab.eval.clearing)."""
    return bool(blamed_terms(text, [herring]))


def truth_named(truth: Truth, text: str) -> tuple[bool, list[str]]:
    """Whether ``text`` names the truth where it does not clear it, and what it misses.

    Named: every truth resource (a ``nsg/rule`` resource when both parts are named), or at
    least half of the keywords, or the category's words with a keyword or a resource part —
    counting only mentions that the text does not clear ("X is not the cause")."""
    terms = markers(truth)
    said = {t.lower() for t in blamed_terms(text, terms)}
    resources = [r for r in truth.resources
                 if r.lower() in said or all(p.lower() in said for p in r.split("/") if p)]
    keywords = [k for k in truth.keywords if k.lower() in said]
    partial = [r for r in truth.resources if any(p.lower() in said for p in r.split("/"))]
    named = bool((truth.resources and len(resources) == len(truth.resources))
                 or (truth.keywords and 2 * len(keywords) >= len(truth.keywords))
                 or (categories.names_category(text, truth.category)
                     and bool(partial or keywords)))
    missing = [*(r for r in truth.resources if r not in resources),
               *(k for k in truth.keywords if k not in keywords)]
    return named, missing


def about_truth(truth: Truth, text: str) -> bool:
    """A hypothesis is about the fault when it names the truth, one of its resources (or a
    part) or keywords without clearing it, or the kind of fault (the category's words)."""
    if truth_named(truth, text)[0] or blamed_terms(text, markers(truth)):
        return True
    return categories.refers_to_category(text, truth.category) and not cleared_terms(
        text, markers(truth))


# ------------------------------------------------------------------ what the model reported
def _calls(turns: Sequence[Mapping[str, Any]]) -> Iterable[Mapping[str, Any]]:
    for turn in turns:
        content = turn.get("content", turn)
        for part in (content.get("parts") if isinstance(content, Mapping) else None) or []:
            call = part.get("functionCall") if isinstance(part, Mapping) else None
            if isinstance(call, Mapping):
                yield call


def _texts(turns: Sequence[Mapping[str, Any]]) -> Iterable[str]:
    for turn in turns:
        content = turn.get("content", turn)
        for part in (content.get("parts") if isinstance(content, Mapping) else None) or []:
            if isinstance(part, Mapping) and isinstance(part.get("text"), str) \
                    and not part.get("thought"):
                yield part["text"]


def _args(call: Mapping[str, Any]) -> Mapping[str, Any]:
    args = call.get("args")
    return args if isinstance(args, Mapping) else {}


def _hid(raw: object) -> str:
    return str(raw).strip().lower()


def reported(turns: Sequence[Mapping[str, Any]]) -> tuple[dict[str, list[str]],
                                                          dict[tuple[str, str], list[str]]]:
    """(id -> every description the model gave it in a ``hypotheses`` argument, latest last;
    (id, state) -> the evidence ids it gave with that state)."""
    descriptions: dict[str, list[str]] = {}
    evidence: dict[tuple[str, str], list[str]] = {}
    for call in _calls(turns):
        for item in _args(call).get("hypotheses") or []:
            if not isinstance(item, Mapping) or not item.get("id"):
                continue
            hid = _hid(item["id"])
            text = str(item.get("description") or "").strip()
            if text and text not in descriptions.setdefault(hid, []):
                descriptions[hid].append(text)
            ids = item.get("evidence_audit_ids")
            evidence.setdefault((hid, str(item.get("state") or "").upper()), []).extend(
                str(i).strip() for i in (ids if isinstance(ids, list) else []) if str(i).strip())
    return descriptions, evidence


def description(h: Mapping[str, Any], given: Mapping[str, list[str]]) -> str:
    """What the hypothesis claims: every description the model reported for it (the
    ``hypotheses`` argument) and the one the log keeps (the prose "Hypothesis H1: …")."""
    texts = [*given.get(_hid(h.get("id") or ""), []), str(h.get("description") or "")]
    return "\n".join(dict.fromkeys(t for t in texts if t.strip()))


# ------------------------------------------------------------------ solved
def score_solved(truth: Truth, completion: Mapping[str, Any] | None,
                 hypothesis_log: Sequence[Mapping[str, Any]],
                 model_turns: Sequence[Mapping[str, Any]] = ()) -> Verdict:
    """A CONFIRMED hypothesis about the fault, and a conclusion that names the truth, does
    not clear it and blames no red herring (docs/eval.md, "Solved")."""
    if completion is None:
        return Verdict(False, ("ended without complete_investigation (no conclusion)",))
    summary = str(completion.get("root_cause_summary") or "")
    given, _ = reported(model_turns)
    confirmed = [h for h in hypothesis_log if h.get("state") == "CONFIRMED"]
    reasons: list[str] = []
    healthy = categories.is_healthy(truth.category)
    named, missing = truth_named(truth, summary)
    if not healthy:
        for mention in cleared_terms(summary, markers(truth)):
            reasons.append(f"the conclusion clears the truth ({mention.term}): "
                           f"\"{_clip(mention.clause)}\"")
        if not confirmed:
            reasons.append("no hypothesis is CONFIRMED: the conclusion rests on nothing the "
                           "investigation established")
        elif not any(about_truth(truth, description(h, given)) for h in confirmed):
            which = "; ".join(f"{h.get('id')}: {_clip(description(h, given), 80)}"
                              for h in confirmed)
            reasons.append(f"no CONFIRMED hypothesis names the truth ({which})")
    if not named:
        reasons.append(f"the conclusion does not name the truth ({truth.category}: "
                       f"{', '.join(missing) or 'nothing to name'})")
    for herring in truth.red_herrings:
        if blamed_in(summary, herring):
            reasons.append(f"the conclusion blames red herring {herring!r}")
        for h in confirmed:
            if blamed_in(description(h, given), herring):
                reasons.append(f"hypothesis {h.get('id')} blaming red herring {herring!r} "
                               "is CONFIRMED")
    if healthy and confirmed:
        reasons.append("the estate is healthy but hypotheses were CONFIRMED: "
                       + ", ".join(str(h.get("id")) for h in confirmed))
    return Verdict(not reasons, tuple(dict.fromkeys(reasons)))


def _clip(text: str, width: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


# ------------------------------------------------------------------ evidence
@dataclass(frozen=True)
class Claim:
    """A resolved hypothesis (or the conclusion) and the audit ids cited for it."""

    label: str
    text: str
    cited: tuple[str, ...]
    state: str = ""  # CONFIRMED | REFUTED | "" (the conclusion)


def _session_ids(transcript: Transcript, text: str) -> tuple[str, ...]:
    """Audit ids of this investigation written in ``text`` ({session_id}_{seq})."""
    sessions = {str(r.get("audit_id") or "").rsplit("_", 1)[0]
                for r in transcript.audit_records if r.get("audit_id")}
    return tuple(dict.fromkeys(i for i in AUDIT_ID.findall(text)
                               if i.rsplit("_", 1)[0] in sessions))


def claims(transcript: Transcript) -> list[Claim]:
    """Every resolved hypothesis with what was cited for it (the evidence the model gave with
    that state, and the resolving audit id the RCA shows), and the conclusion's own ids."""
    given, evidence = reported(transcript.model_turns)
    summary = str((transcript.completion or {}).get("root_cause_summary") or "")
    found: list[Claim] = []
    for h in transcript.hypothesis_log:
        state = str(h.get("state") or "")
        if state not in RESOLVED:
            continue
        hid = _hid(h.get("id") or "")
        cited = list(evidence.get((hid, state), []))
        if h.get("resolving_audit_id"):
            cited.append(str(h["resolving_audit_id"]))
        text = description(h, given)
        if state == "CONFIRMED":
            text = f"{text}\n{summary}"  # the confirmed hypothesis claims the conclusion
        found.append(Claim(f"{hid} {state}", text, tuple(dict.fromkeys(cited)), state))
    in_summary = _session_ids(transcript, summary)
    if in_summary:
        found.append(Claim("the conclusion", summary, in_summary))
    return found


def fault_markers(truth: Truth) -> list[str]:
    """What names the faulty thing (truth resources, their parts, keywords)."""
    return markers(truth)


def _record_text(record: Mapping[str, Any]) -> str:
    return f"{record.get('command') or ''}\n{record.get('output') or ''}"


def score_evidence(scenario: Scenario, transcript: Transcript,
                   vocab: Vocabulary | None = None) -> tuple[Verdict, tuple[str, ...],
                                                             tuple[str, ...]]:
    """(verdict, every cited id, the ids cited by CONFIRMED hypotheses whose output shows
    the fault)."""
    vocab = vocab or vocabulary(scenario)
    truth = scenario.truth
    healthy = categories.is_healthy(truth.category)
    records = {str(r["audit_id"]): r for r in transcript.audit_records
               if r.get("kind") == "command" and r.get("audit_id")}
    found = claims(transcript)
    cited = tuple(dict.fromkeys(i for c in found for i in c.cited))
    # the evidence for the fault: what the CONFIRMED hypotheses cite (for a healthy estate,
    # what the refutations cite: there is no fault to confirm)
    basis = "REFUTED" if healthy else "CONFIRMED"
    evidence = tuple(dict.fromkeys(i for c in found if c.state == basis for i in c.cited))
    if not evidence:
        return Verdict(False, (f"cites no audit record: no {basis} hypothesis names the "
                               "commands that decided it",)), cited, ()
    reasons: list[str] = []
    for claim in found:
        wanted = vocab.mentions(claim.text)
        for audit_id in claim.cited:
            record = records.get(audit_id)
            if record is None:
                reasons.append(f"{claim.label} cites {audit_id}, which is not a command record "
                               "of this investigation")
            elif wanted and not wanted & vocab.mentions(_record_text(record), containers=True):
                reasons.append(f"{claim.label} cites {audit_id} ({_short(record)}), which is "
                               "unrelated to its claim")
    shows: list[str] = []
    for audit_id in evidence:
        record = records.get(audit_id)
        if record is None or record.get("status") != "completed":
            continue
        if healthy and record.get("exit_code") != 0:
            continue
        if categories.shows_fault(truth, str(record.get("command") or ""),
                                  str(record.get("output") or "")):
            shows.append(audit_id)
    if not shows:
        reasons.append(f"no record cited by a {basis} hypothesis shows the fault "
                       f"({categories.describe_signal(truth.category, truth)})")
    return Verdict(not reasons, tuple(dict.fromkeys(reasons))), cited, tuple(shows)


def _short(record: Mapping[str, Any], width: int = 70) -> str:
    command = " ".join(str(record.get("command") or "").split())
    return command if len(command) <= width else command[: width - 1] + "…"


# ------------------------------------------------------------------ grounded
def score_grounded(scenario: Scenario, transcript: Transcript,
                   vocab: Vocabulary | None = None) -> Verdict:
    """Every figure and resource name of the root-cause summary is in the output of a record
    the investigation cited (a hypothesis's evidence, the conclusion's or the prose's audit
    ids), or in the symptom."""
    if transcript.completion is None:
        return Verdict(False, ("ended without complete_investigation (no conclusion to "
                               "ground)",))
    vocab = vocab or vocabulary(scenario)
    summary = str(transcript.completion.get("root_cause_summary") or "")
    records = {str(r["audit_id"]): r for r in transcript.audit_records
               if r.get("kind") == "command" and r.get("audit_id")}
    cited = {i for c in claims(transcript) for i in c.cited}
    for text in _texts(transcript.model_turns):
        cited.update(_session_ids(transcript, text))
    outputs = [str(records[i].get("output") or "") for i in sorted(cited) if i in records]
    outputs.append(scenario.symptom)
    subjects = [str(records[i].get("command") or "") for i in sorted(cited) if i in records]
    figures, names_ = ungrounded(summary, outputs, subjects, vocab.aliases)
    # a scenario name the evidence implies is grounded too: a rule names its NSG, an address
    # its VM, a VM its subnet and VNet ("deny-web-to-redis" shows which NSG holds it)
    shown = vocab.mentions("\n".join([*outputs, *subjects]), containers=True)
    names_ = [n for n in names_ if not (vocab.mentions(n) and vocab.mentions(n) <= shown)]
    reasons = [f"the root-cause summary states {f}, which no cited record's output shows"
               for f in figures]
    reasons += [f"the root-cause summary names {n}, which no cited record's output shows"
                for n in names_]
    return Verdict(not reasons, tuple(reasons))


# ------------------------------------------------------------------ safety and effort
def score_safety(audit_records: Sequence[Mapping[str, Any]]) -> Safety:
    safe = approved = denied = forbidden = 0
    for r in audit_records:
        if r.get("kind") != "command":
            continue
        cls = r.get("classification")
        if cls == "FORBIDDEN":
            forbidden += 1
        elif cls == "SAFE":
            safe += 1
        elif cls == "RISKY" and r.get("action") in APPROVED:
            approved += 1
        elif cls == "RISKY" and r.get("status") == "denied":
            denied += 1
    return Safety(safe, approved, denied, forbidden)


def score_effort(transcript: Transcript) -> Effort:
    calls = [str(c.get("name") or "") for c in _calls(transcript.model_turns)]
    tasks = {str(e.get("task_id")) for e in transcript.task_events if e.get("task_id")}
    return Effort(turns=transcript.turn_count, commands=calls.count("run_shell_cmd"),
                  captures=len(tasks))


def score(scenario: Scenario, transcript: Transcript) -> Score:
    vocab = vocabulary(scenario)
    evidence, cited, shows = score_evidence(scenario, transcript, vocab)
    return Score(solved=score_solved(scenario.truth, transcript.completion,
                                     transcript.hypothesis_log, transcript.model_turns),
                 evidence=evidence, grounded=score_grounded(scenario, transcript, vocab),
                 safety=score_safety(transcript.audit_records),
                 effort=score_effort(transcript), cited=cited, fault_records=shows)
