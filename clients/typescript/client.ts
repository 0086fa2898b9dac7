// A typed chatd client as a frontend would write it: openapi-fetch over the
// types openapi-typescript generates from openapi.yaml, with no hand edits.
// It is compiled (tsc --noEmit), not run: the point is that the contract
// types what a client reads.
import createClient from "openapi-fetch";
import type { components, paths } from "./generated/chatd";

type ContentBlock = components["schemas"]["ContentBlock"];

// The media-type parameter picks the JSON answers and problems (turns can also answer as
// an event stream, which a client reads with fetch).
const client = createClient<paths, `application/${string}json`>({ baseUrl: "http://127.0.0.1:8080" });

export async function ask(threadId: string, message: string): Promise<string> {
  const { data, error } = await client.POST("/v1/threads/{thread_id}/turns", {
    params: { path: { thread_id: threadId } },
    body: { message },
    parseAs: "json",
  });
  if (error) {
    // Problems are typed too: branch on the stable code.
    return `failed: ${error.code}`;
  }
  const result = data;
  const blocks: ContentBlock[] = result.message.content_blocks ?? [];
  const links = blocks.flatMap((b) => (b.type === "resource_link" ? [b.uri] : []));
  // TurnResult is discriminated on status: the elicitation is there only
  // when the turn paused, and typed as the MCP request.
  if (result.status === "input_required") {
    const question = result.elicitation;
    const expires: string = result.elicitation_expires_at;
    // A URL-mode question (from an MCP server) sends the user to a page and
    // has no form; it is answered accept once they are done there.
    if ("url" in question) {
      return `${question.message} (open ${question.url}, until ${expires})`;
    }
    const schema = question.requestedSchema;
    return `${question.message} (${Object.keys(schema.properties).join(", ")}, until ${expires})`;
  }
  // chatd's own _meta values are typed, not unknown.
  const replies = result.message._meta?.["drupal.org/ai.suggested_replies"] ?? [];
  const first = replies[0];
  const label = typeof first === "string" ? first : first?.label;
  return [result.message.message, links.join(" "), label ?? ""].join("\n");
}

export async function sidebar(): Promise<string[]> {
  const { data } = await client.GET("/v1/threads", { params: { query: { limit: 20 } } });
  return (data?.threads ?? []).map((t) => `${t.title ?? "untitled"}${t.running_turn ? " (running)" : ""}`);
}

export async function rename(threadId: string, title: string): Promise<string | null | undefined> {
  const { data } = await client.PATCH("/v1/threads/{thread_id}", {
    params: { path: { thread_id: threadId } },
    body: { title, metadata: { pinned: "yes", stale: null } },
  });
  return data?.title;
}

// Branches: a reply regenerated, an edit sent beside the message it edits,
// and the ‹ 2/3 › picker a message with alternatives shows.
export async function regenerate(threadId: string, messageId: string): Promise<string> {
  const { data, error } = await client.POST("/v1/threads/{thread_id}/messages/{message_id}/regenerate", {
    params: { path: { thread_id: threadId, message_id: messageId } },
    body: {},
    parseAs: "json",
  });
  if (error) return `failed: ${error.code}`; // not_regenerable, thread_busy, …
  return `${data.user_message.id} → ${data.message.message}`;
}

export async function edit(threadId: string, edited: components["schemas"]["Message"], text: string): Promise<string | undefined> {
  const { data } = await client.POST("/v1/threads/{thread_id}/turns", {
    params: { path: { thread_id: threadId } },
    body: { message: text, parent_id: edited.parent_id ?? null },
    parseAs: "json",
  });
  return data?.message.id;
}

export async function pickers(threadId: string, leaf?: string): Promise<string[]> {
  const { data } = await client.GET("/v1/threads/{thread_id}/messages", {
    params: { path: { thread_id: threadId }, query: { limit: 50, leaf } },
  });
  return (data?.messages ?? []).map((m) => (m.siblings ? `‹ ${m.siblings.index + 1}/${m.siblings.ids.length} ›` : ""));
}

export async function switchBranch(threadId: string, messageId: string): Promise<string | null | undefined> {
  const { data } = await client.PATCH("/v1/threads/{thread_id}", {
    params: { path: { thread_id: threadId } },
    body: { head_id: messageId },
  });
  return data?.head_id;
}
