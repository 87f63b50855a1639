// The plan checklist: task, progress bar and one row per step.
//
// The plan JSON uses the planning spec's field names: {planId, task, description, background,
// steps: [{id, title, description, acceptanceCriteria, status, outputSummary, evidence,
// blocker, needsReplan}]}; evidence items are {kind, ref, summary}.

import { append, details, h } from "./dom.js";

/** Status → [icon, label], in the order the progress line lists them. */
export const STEP_STATUS = {
  done: ["✓", "done"],
  in_progress: ["◐", "in progress"],
  pending: ["○", "pending"],
  blocked: ["⊘", "blocked"],
  skipped: ["↷", "skipped"],
};

function stepStatus(step) {
  const s = step && step.status;
  return Object.prototype.hasOwnProperty.call(STEP_STATUS, s) ? s : "pending";
}

function progressBar(counts, total) {
  const bar = h("div", "ja-progress");
  bar.setAttribute("role", "progressbar");
  bar.setAttribute("aria-valuemin", "0");
  bar.setAttribute("aria-valuemax", String(total));
  bar.setAttribute("aria-valuenow", String(counts.done + counts.skipped));
  for (const status of ["done", "skipped", "blocked", "in_progress"]) {
    if (!counts[status]) continue;
    const seg = h("span", `ja-progress-seg ja-st-${status}`);
    seg.style.width = `${(100 * counts[status]) / total}%`;
    bar.appendChild(seg);
  }
  return bar;
}

function evidenceList(evidence) {
  const list = h("ul", "ja-evidence");
  for (const ev of evidence) {
    const li = h("li");
    if (ev && typeof ev === "object") {
      append(li, h("span", "ja-evidence-kind", ev.kind || "evidence"), " ", ev.summary || "");
      if (ev.ref) append(li, " ", h("code", "ja-evidence-ref", ev.ref));
    } else {
      li.textContent = String(ev);
    }
    list.appendChild(li);
  }
  return list;
}

function stepRow(state, planId, step, index) {
  const status = stepStatus(step);
  const [icon, label] = STEP_STATUS[status];
  const li = h("li", `ja-step ja-st-${status}`);
  li.dataset.status = status;
  li.dataset.stepId = String(step.id ?? index + 1);

  const head = h("div", "ja-step-head");
  const iconEl = h("span", "ja-step-icon", icon);
  iconEl.title = label;
  iconEl.setAttribute("aria-label", label);
  append(head, iconEl, h("span", "ja-step-title", step.title || `Step ${index + 1}`));
  if (step.needsReplan) head.appendChild(h("span", "ja-tag ja-tag-warn", "needs replan"));
  if (status !== "pending" && status !== "done") {
    head.appendChild(h("span", `ja-tag ja-st-${status}`, label));
  }
  li.appendChild(head);

  if (step.outputSummary) li.appendChild(h("div", "ja-step-output", step.outputSummary));
  if (status === "blocked" || step.blocker) {
    li.appendChild(h("div", "ja-step-blocker", `Blocked: ${step.blocker || "(no blocker given)"}`));
  }

  const criteria = Array.isArray(step.acceptanceCriteria) ? step.acceptanceCriteria : [];
  const evidence = Array.isArray(step.evidence) ? step.evidence : [];
  if (step.description || criteria.length || evidence.length) {
    const parts = [];
    if (step.description) parts.push("description");
    if (criteria.length) parts.push(`${criteria.length} criteria`);
    if (evidence.length) parts.push(`${evidence.length} evidence`);
    const more = details(
      state,
      `step:${planId}:${li.dataset.stepId}:${index}`,
      "ja-step-more",
      [parts.join(" · ")],
      status === "in_progress",
    );
    if (step.description) more.appendChild(h("div", "ja-step-desc", step.description));
    if (criteria.length) {
      const ul = h("ul", "ja-criteria");
      for (const c of criteria) ul.appendChild(h("li", null, c));
      append(more, h("div", "ja-label", "Acceptance criteria"), ul);
    }
    if (evidence.length) append(more, h("div", "ja-label", "Evidence"), evidenceList(evidence));
    li.appendChild(more);
  }
  return li;
}

/** Draw the plan checklist for `plan` (a plan JSON object). */
export function renderPlan(state, plan) {
  const steps = Array.isArray(plan.steps) ? plan.steps : [];
  const counts = { done: 0, in_progress: 0, pending: 0, blocked: 0, skipped: 0 };
  for (const step of steps) counts[stepStatus(step)] += 1;
  const total = Math.max(steps.length, 1);
  const planId = plan.planId || "plan";

  const box = h("section", "ja-plan");
  box.dataset.planId = planId;
  const head = h("div", "ja-plan-head");
  append(
    head,
    h("span", "ja-plan-label", "Plan"),
    h("span", "ja-plan-task", plan.task || "(no task)"),
    h("span", "ja-plan-count", `${counts.done + counts.skipped}/${steps.length}`),
  );
  box.appendChild(head);
  box.appendChild(progressBar(counts, total));
  const line = Object.keys(STEP_STATUS)
    .filter((s) => counts[s])
    .map((s) => `${counts[s]} ${STEP_STATUS[s][1]}`)
    .join(" · ");
  box.appendChild(h("div", "ja-plan-progress", line || "no steps"));
  if (plan.description) box.appendChild(h("div", "ja-plan-desc", plan.description));

  const list = h("ol", "ja-steps");
  const frag = document.createDocumentFragment();
  steps.forEach((step, i) => frag.appendChild(stepRow(state, planId, step || {}, i)));
  list.appendChild(frag);
  box.appendChild(list);
  return box;
}
