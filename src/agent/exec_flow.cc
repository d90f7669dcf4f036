#include "agent/exec_flow.h"

#include <chrono>
#include <ctime>

#include "policy/consent.h"
#include "policy/shell_words.h"

namespace anvil::agent {
namespace {

double UnixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// A command as a question shows it: sanitized, every line break escaped (folded into a space, a
// script's second line would read as part of a comment on its first).
std::string Shown(const std::vector<std::string>& argv, std::size_t max = 400) {
  return SanitizeForDisplay(JoinShellWords(argv), max, LineBreaks::kEscape);
}

// The command as a question shows it: whole.
std::string ShownWhole(const std::vector<std::string>& argv) { return Shown(argv, kNoDisplayCap); }

// The judged commands of the script that no rule allows and no harmless entry covers.
std::vector<std::vector<std::string>> Unapproved(const CommandVerdict& verdict) {
  std::vector<std::vector<std::string>> out;
  for (const auto& seg : verdict.segments) {
    if (seg.segment.role != SegmentRole::kJudged) continue;
    if (seg.decision == Decision::kAllow || (!seg.decision && seg.harmless != nullptr)) continue;
    out.push_back(seg.segment.argv);
  }
  return out;
}

nlohmann::json RuleJson(const CommandRule* rule) {
  if (rule == nullptr) return nullptr;
  return {{"file", rule->file},
          {"line", rule->line},
          {"column", rule->column},
          {"layer", ToString(rule->layer)},
          {"decision", ToString(rule->decision)},
          {"justification", rule->justification}};
}

nlohmann::json WideningJson(const Widening& w) {
  return {{"kind", ToString(w.kind)}, {"value", w.value}, {"flags", w.Flags()}};
}

nlohmann::json RefusalsJson(const std::vector<RefusalFact>& refusals) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : refusals) {
    nlohmann::json item = {{"kind", ToString(r.kind)}, {"subject", r.subject}};
    if (!r.detail.empty()) item["detail"] = r.detail;
    if (r.kind == RefusalFact::Kind::kWrite) {
      item["area"] = r.area;
      item["root"] = r.root;
    }
    out.push_back(std::move(item));
  }
  return out;
}

void Apply(const Widening& w, EscalationContext& context) {
  switch (w.kind) {
    case WideningKind::kWritableGit:
      context.writable_git = true;
      break;
    case WideningKind::kAllowHost:
      context.allowed_hosts.push_back(w.value);
      break;
    case WideningKind::kWritableRoot:
      context.writable_roots.push_back(w.value);
      break;
  }
}

std::string SandboxLine(const EscalationContext& c) {
  std::string out =
      std::string(ToString(c.policy)) + ", network " + std::string(ToString(c.network));
  if (c.writable_git) out += ", git metadata writable";
  for (const auto& h : c.allowed_hosts) out += ", host " + SanitizeForDisplay(h, 100);
  for (const auto& r : c.writable_roots) {
    if (r != c.workspace) out += ", writable " + SanitizeForDisplay(r, 200);
  }
  return out;
}

// One question, its answer, and both in the report.
std::optional<ApprovalAnswer> AskAndRecord(Asker& asker, const Question& question,
                                           nlohmann::json& questions) {
  std::optional<ApprovalAnswer> answer = asker.Ask(question);
  nlohmann::json entry = question.ToJson();
  entry["answer"] = answer ? nlohmann::json(ToString(*answer)) : nlohmann::json(nullptr);
  questions.push_back(std::move(entry));
  return answer;
}

}  // namespace

std::string NowIso8601() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string Question::Text() const {
  std::string out;
  if (kind == Kind::kCommand) {
    out += "Anvil: an agent wants to run a command.\n";
  } else {
    out += "Anvil: the sandbox refused the command something; re-run it with a wider sandbox?\n";
  }
  out += "  command:  " + ShownWhole(argv) + "\n";
  out += "  cwd:      " + SanitizeForDisplay(cwd, 300) + "\n";
  out += "  sandbox:  " + sandbox + "\n";
  if (widening) out += "  widening: " + widening->Describe() + " (this run only)\n";
  out += "  why:      " + SanitizeForDisplay(reason, 600) + "\n";
  if (unapproved.size() > 1) {
    out += "  not allowed by any rule:";
    for (const auto& p : unapproved) out += " `" + Shown(p, 200) + "`";
    out += "\n";
  }
  if (!agent_reason.empty()) {
    out += "  agent's reason (its words): " + SanitizeForDisplay(agent_reason, 300) + "\n";
  }
  if (!always_prefixes.empty()) {
    out += "  always allows:";
    for (const auto& p : always_prefixes) out += " `" + Shown(p, 120) + "`";
    out += "\n";
    // An allow rule names a command, not the files it runs: `make` or `npm test` runs whatever
    // the directory's Makefile or package.json says.
    out +=
        "                 from now on without a question, in any directory and repository: what "
        "it runs there (a Makefile, a script, a build file) is that directory's own\n";
  }
  return out;
}

nlohmann::json Question::ToJson() const {
  nlohmann::json out = {{"kind", kind == Kind::kCommand ? "command" : "widening"},
                        {"command", argv},
                        {"cwd", cwd},
                        {"sandbox", sandbox},
                        {"reason", reason},
                        {"always_offered", !always_prefixes.empty()}};
  if (widening) out["widening"] = WideningJson(*widening);
  if (!agent_reason.empty()) out["agent_reason"] = agent_reason;
  if (!unapproved.empty()) out["not_allowed"] = unapproved;
  return out;
}

ExecResult RunExec(const ExecRequest& request, Asker& asker, const SandboxRunner& run,
                   const IsDirectory& is_directory, const AuditSink& audit) {
  ExecResult result;
  nlohmann::json& report = result.report;
  report["command"] = request.argv;
  report["cwd"] = request.RunDir();
  report["mode"] = ToString(request.mode);
  report["ran"] = false;
  report["questions"] = nlohmann::json::array();
  report["runs"] = nlohmann::json::array();
  report["refusals"] = nlohmann::json::array();
  report["escalation"] = nullptr;

  auto rules = LoadCommandRules(request.rules);
  if (!rules) {
    report["decision"] = nullptr;
    report["error"] = rules.error().ToString();
    report["exit"] = kExitRulesBroken;
    result.exit_status = kExitRulesBroken;
    return result;
  }
  const CommandVerdict verdict = EvaluateCommand(*rules, request.argv, &request.search);
  report["decision"] = ToString(verdict.outcome);
  report["reason"] = verdict.reason;
  report["rule"] = RuleJson(verdict.rule);

  CommandAuditContext audit_context{request.session, request.requester, request.RunDir(),
                                    request.mode,    request.id,        0};
  EscalationAudit escalation_audit{request.session,  request.requester,
                                   request.RunDir(), std::string(ToString(request.mode)),
                                   request.id,       request.argv};
  auto refuse = [&](const std::string& reason, const std::string& how) {
    report["refused"] = true;
    report["refusal"] = reason;
    if (!how.empty()) report["how_to_allow"] = how;
    report["exit"] = kExitRefused;
    result.exit_status = kExitRefused;
    return result;
  };

  EscalationContext context = request.context;
  const ApprovalDecision decision = DecideApproval(verdict, request.mode, asker.CanAsk());
  audit(CommandDecisionAuditLine(audit_context, verdict, decision, UnixNow()));
  report["approval"] = {{"action", ToString(decision.action)}, {"reason", decision.reason}};
  if (decision.action == ApprovalAction::kRefuse) {
    return refuse(decision.reason, decision.how_to_allow);
  }
  nlohmann::json& questions = report["questions"];
  // Every question shows the whole command; one too long to show is not asked about.
  const std::size_t shown_bytes = ShownWhole(request.argv).size();
  const bool too_long_to_ask = shown_bytes > kMaxQuestionCommandBytes;
  const std::string too_long_reason =
      "the command is too long to show in a question (" + std::to_string(shown_bytes) +
      " bytes shown; a question shows at most " + std::to_string(kMaxQuestionCommandBytes) +
      "), so it is not asked about";
  const std::string too_long_how =
      "split it into shorter commands, or run it yourself outside the agent";
  if (decision.action == ApprovalAction::kAsk && too_long_to_ask) {
    return refuse(too_long_reason, too_long_how);
  }
  if (decision.action == ApprovalAction::kAsk) {
    Question q;
    q.kind = Question::Kind::kCommand;
    q.argv = request.argv;
    q.cwd = request.RunDir();
    q.mode = ToString(request.mode);
    q.sandbox = SandboxLine(context);
    q.reason = decision.reason;
    q.always_prefixes = decision.always_prefixes;
    q.unapproved = Unapproved(verdict);
    const std::optional<ApprovalAnswer> answer = AskAndRecord(asker, q, questions);
    const AnswerEffect effect =
        ApplyAnswer(decision, answer.value_or(ApprovalAnswer::kNever), NowIso8601());
    audit(CommandAnswerAuditLine(audit_context, verdict, answer.value_or(ApprovalAnswer::kNever),
                                 effect, UnixNow()));
    if (effect.action != ApprovalAction::kRun) {
      return refuse(answer ? effect.note : "refused: no answer came",
                    "answer once or always, or " + (decision.always_prefixes.empty()
                                                        ? std::string("change the rule")
                                                        : std::string("add an allow rule")));
    }
    if (!effect.rules.empty()) {
      if (auto s = RecordAlwaysRules(request.user_rules_dir, effect.rules); !s) {
        // The person said yes: it runs this time; the report says the rule was not kept.
        report["rules_error"] = s.error().ToString();
      } else {
        nlohmann::json written = nlohmann::json::array();
        for (const auto& r : effect.rules) written.push_back(r.prefix);
        report["rules_written"] = written;
      }
    }
  }

  std::vector<Widening> widenings;
  if (request.requested) {
    if (auto s = CheckWidening(*request.requested, context, is_directory); !s) {
      audit(EscalationAuditLine(escalation_audit, &*request.requested, "refused", s.error().message,
                                UnixNow()));
      return refuse("the widening asked for is not allowed: " + s.error().message, "");
    }
    const ApprovalDecision widen =
        DecideApproval(verdict, request.mode, asker.CanAsk(), Escalation::kAgentRequest);
    if (widen.action == ApprovalAction::kRefuse) {
      audit(EscalationAuditLine(escalation_audit, &*request.requested, "refused", widen.reason,
                                UnixNow()));
      return refuse(widen.reason, widen.how_to_allow);
    }
    if (too_long_to_ask) {
      audit(EscalationAuditLine(escalation_audit, &*request.requested, "refused", too_long_reason,
                                UnixNow()));
      return refuse(too_long_reason, too_long_how);
    }
    audit(EscalationAuditLine(escalation_audit, &*request.requested, "offered", widen.reason,
                              UnixNow()));
    Question q;
    q.kind = Question::Kind::kWidening;
    q.argv = request.argv;
    q.cwd = request.RunDir();
    q.mode = ToString(request.mode);
    q.sandbox = SandboxLine(context);
    q.reason = "the agent asks for it before running";
    q.widening = request.requested;
    q.agent_reason = request.request_reason;
    const std::optional<ApprovalAnswer> answer = AskAndRecord(asker, q, questions);
    if (!answer || *answer == ApprovalAnswer::kNever) {
      audit(EscalationAuditLine(escalation_audit, &*request.requested, "refused",
                                "the user did not approve the widening", UnixNow()));
      return refuse("the widening was not approved", "run it without the widening");
    }
    audit(EscalationAuditLine(escalation_audit, &*request.requested, "approved",
                              "approved for this run", UnixNow()));
    widenings.push_back(*request.requested);
    Apply(*request.requested, context);
  }

  nlohmann::json& runs = report["runs"];
  SandboxRun last;
  for (int round = 0;; ++round) {
    std::vector<std::string> args = request.sandbox_flags;
    for (const auto& w : widenings) {
      for (const auto& f : w.Flags()) args.push_back(f);
    }
    args.push_back("--");
    args.insert(args.end(), request.argv.begin(), request.argv.end());
    last = run(args);
    report["ran"] = report["ran"].get<bool>() || last.started;
    nlohmann::json applied = nlohmann::json::array();
    for (const auto& w : widenings) applied.push_back(WideningJson(w));
    runs.push_back({{"widenings", applied},
                    {"exit", last.status},
                    {"started", last.started},
                    {"refusals", RefusalsJson(last.refusals)}});
    report["refusals"] = RefusalsJson(last.refusals);
    if (!last.git_check_error.empty()) {
      // What the command left was not all checked: never run it again, say so.
      report["git_check_error"] = last.git_check_error;
      break;
    }
    // Only a failure caused by the sandbox is a reason to widen it.
    if (last.status == 0 || !last.started || last.refusals.empty()) break;
    const std::optional<Widening> proposal = ProposeWidening(last.refusals, context, is_directory);
    if (!proposal) {
      nlohmann::json why = nlohmann::json::array();
      for (const auto& r : last.refusals) {
        why.push_back(NoWideningReason(r, context, is_directory));
      }
      report["escalation"] = {{"state", "none"}, {"why", why}};
      break;
    }
    nlohmann::json offer = {{"widening", WideningJson(*proposal)}};
    if (round >= request.max_escalations) {
      offer["state"] = "not asked";
      const std::string why = "at most " + std::to_string(request.max_escalations) +
                              " widenings are offered for one command";
      offer["why"] = why;
      report["escalation"] = offer;
      audit(EscalationAuditLine(escalation_audit, &*proposal, "unavailable", why, UnixNow()));
      break;
    }
    const ApprovalDecision widen =
        DecideApproval(verdict, request.mode, asker.CanAsk(), Escalation::kAfterSandboxRefusal);
    if (widen.action == ApprovalAction::kRefuse) {
      offer["state"] = "not asked";
      offer["why"] = widen.reason;
      offer["how_to_allow"] = widen.how_to_allow;
      report["escalation"] = offer;
      audit(EscalationAuditLine(escalation_audit, &*proposal, "unavailable", widen.reason,
                                UnixNow()));
      break;
    }
    if (too_long_to_ask) {
      offer["state"] = "not asked";
      offer["why"] = too_long_reason;
      offer["how_to_allow"] = too_long_how;
      report["escalation"] = offer;
      audit(EscalationAuditLine(escalation_audit, &*proposal, "unavailable", too_long_reason,
                                UnixNow()));
      break;
    }
    audit(EscalationAuditLine(escalation_audit, &*proposal, "offered", widen.reason, UnixNow()));
    Question q;
    q.kind = Question::Kind::kWidening;
    q.argv = request.argv;
    q.cwd = request.RunDir();
    q.mode = ToString(request.mode);
    q.sandbox = SandboxLine(context);
    q.reason = "it failed (exit " + std::to_string(last.status) +
               ") and the sandbox refused it: " + SanitizeForDisplay(last.refusals[0].subject, 200);
    q.widening = proposal;
    const std::optional<ApprovalAnswer> answer = AskAndRecord(asker, q, questions);
    if (!answer || *answer == ApprovalAnswer::kNever) {
      offer["state"] = "refused";
      report["escalation"] = offer;
      audit(EscalationAuditLine(escalation_audit, &*proposal, "refused",
                                answer ? "the user answered never" : "no answer came", UnixNow()));
      break;
    }
    offer["state"] = "approved";
    report["escalation"] = offer;
    audit(EscalationAuditLine(escalation_audit, &*proposal, "approved",
                              "approved for this run (a widening is never recorded as always)",
                              UnixNow()));
    widenings.push_back(*proposal);
    Apply(*proposal, context);
  }
  report["exit"] = last.status;
  result.exit_status = last.status;
  return result;
}

}  // namespace anvil::agent
