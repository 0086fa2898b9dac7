// chatd.js: what a deep-chat element needs to answer chatd's questions.
// Assign htmlClassUtilities to the element; a question's form then posts
// its answer to chatd and the element shows the reply.
//
//   import {htmlClassUtilities} from "https://chatd.example/deep-chat/chatd.js";
//   chat.htmlClassUtilities = htmlClassUtilities;

function elementOf(node) {
  const root = node.getRootNode();
  return root && root.host ? root.host : node.closest("deep-chat");
}

function endpoints(chat) {
  const connect = chat.connect || {};
  const url = new URL(connect.url, document.baseURI);
  const base = url.href.replace(/\/v1\/deep-chat\/?$/, "");
  const props = connect.additionalBodyProps || {};
  return {base, threadID: props.thread_id, headers: connect.headers || {}};
}

// value reads one field of the form as the requested schema types it.
function value(label) {
  const kind = label.dataset.kind;
  const control = label.querySelector("input, select");
  if (kind === "boolean") return control.checked;
  if (kind === "multi") return Array.from(control.selectedOptions, (o) => o.value);
  if (control.value === "") return undefined;
  if (control.type === "number") return Number(control.value);
  return control.value;
}

async function answer(form, action) {
  const chat = elementOf(form);
  const {base, threadID, headers} = endpoints(chat);
  const out = form.querySelector(".chatd-question-error");
  const body = {action};
  if (action === "accept") {
    body.content = {};
    for (const label of form.querySelectorAll(".chatd-field")) {
      const v = value(label);
      if (v !== undefined) body.content[label.dataset.name] = v;
    }
  }
  const id = encodeURIComponent(form.dataset.elicitationId);
  const res = await fetch(`${base}/v1/threads/${encodeURIComponent(threadID)}/elicitations/${id}`, {
    method: "POST",
    headers: {...headers, "Content-Type": "application/json", Accept: "application/json"},
    body: JSON.stringify(body),
  });
  if (!res.ok) {
    const problem = await res.json().catch(() => ({}));
    const fields = (problem.errors || []).map((e) => `${e.field}: ${e.detail}`).join("; ");
    out.textContent = [problem.detail || res.statusText, fields].filter(Boolean).join(" — ");
    return;
  }
  for (const c of form.querySelectorAll("input, select, button")) c.disabled = true;
  out.textContent = "";
  const history = await fetch(`${base}/v1/deep-chat/history?thread_id=${encodeURIComponent(threadID)}`, {headers});
  if (!history.ok) return;
  const items = await history.json();
  const last = items[items.length - 1];
  if (last && last.role === "ai") chat.addMessage({role: "ai", html: last.html});
}

export const htmlClassUtilities = {
  "chatd-question": {
    events: {
      submit: (event) => {
        event.preventDefault();
        answer(event.currentTarget, "accept");
      },
      click: (event) => {
        const button = event.target.closest("button[data-action]");
        if (button) answer(event.currentTarget, button.dataset.action);
      },
    },
  },
};
