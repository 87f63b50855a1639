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

/** Plans longer than this fold their leading finished steps. */
const FOLD_AFTER = 12;

/** Finished statuses a long plan folds away (blocked steps stay in view). */
const RESOLVED = new Set(["done", "skipped"]);

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

function stepHead(tag, step, status, index) {
  const [icon, label] = STEP_STATUS[status];
  const head = h(tag, "ja-step-head");
  const iconEl = h("span", "ja-step-icon", icon);
  iconEl.title = label;
  iconEl.setAttribute("aria-label", label);
  append(head, iconEl, h("span", "ja-step-title", step.title || `Step ${index + 1}`));
  if (step.outputSummary) head.appendChild(h("span", "ja-step-output", step.outputSummary));
  if (step.needsReplan) head.appendChild(h("span", "ja-tag ja-tag-warn", "needs replan"));
  if (status !== "pending" && status !== "done") {
    head.appendChild(h("span", `ja-tag ja-st-${status}`, label));
  }
  if (status === "blocked" || step.blocker) {
    // Inside the head so it shows while the step is folded: a blocker is what the user must see.
    head.appendChild(h("span", "ja-step-blocker", `Blocked: ${step.blocker || "(no blocker given)"}`));
  }
  return head;
}

function stepRow(state, planId, step, index) {
  const status = stepStatus(step);
  const id = String(step.id ?? index + 1);
  const criteria = Array.isArray(step.acceptanceCriteria) ? step.acceptanceCriteria : [];
  const evidence = Array.isArray(step.evidence) ? step.evidence : [];
  const hasMore = Boolean(step.description || criteria.length || evidence.length);
  const key = `step:${planId}:${id}:${index}`;

  let li;
  if (hasMore) {
    // The whole row is a <details>: clicking the step shows its description, criteria and
    // evidence. The active step starts open.
    li = h("details", `ja-step ja-st-${status}`);
    const head = stepHead("summary", step, status, index);
    li.appendChild(head);
    li.open = state.open.has(key) ? state.open.get(key) : status === "in_progress";
    head.addEventListener("click", () => state.open.set(key, !li.open));
    const body = h("div", "ja-step-body");
    if (step.description) body.appendChild(h("div", "ja-step-desc", step.description));
    if (criteria.length) {
      const ul = h("ul", "ja-criteria");
      for (const c of criteria) ul.appendChild(h("li", null, c));
      append(body, h("div", "ja-label", "Acceptance criteria"), ul);
    }
    if (evidence.length) append(body, h("div", "ja-label", "Evidence"), evidenceList(evidence));
    li.appendChild(body);
  } else {
    li = h("div", `ja-step ja-st-${status}`);
    li.appendChild(stepHead("div", step, status, index));
  }
  li.dataset.status = status;
  li.dataset.stepId = id;
  li.setAttribute("role", "listitem");
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

  const list = h("div", "ja-steps");
  list.setAttribute("role", "list");
  // In a long plan, fold the finished steps at the top so the open ones stay in view.
  let folded = 0;
  if (steps.length > FOLD_AFTER) {
    while (folded < steps.length && RESOLVED.has(stepStatus(steps[folded]))) folded += 1;
    if (folded < 3) folded = 0;
  }
  if (folded) {
    const fold = details(state, `fold:${planId}`, "ja-steps-fold", [
      h("span", "ja-step-icon", "✓"),
      `${folded} finished steps`,
    ]);
    const inner = h("div", "ja-steps-inner");
    inner.setAttribute("role", "list");
    const frag = document.createDocumentFragment();
    for (let i = 0; i < folded; i += 1) frag.appendChild(stepRow(state, planId, steps[i] || {}, i));
    inner.appendChild(frag);
    fold.appendChild(inner);
    list.appendChild(fold);
  }
  const frag = document.createDocumentFragment();
  for (let i = folded; i < steps.length; i += 1) {
    frag.appendChild(stepRow(state, planId, steps[i] || {}, i));
  }
  list.appendChild(frag);
  box.appendChild(list);
  return box;
}
