// Row 9d's peer: the smallest stream relay built on resumable-stream, set
// up as its documentation shows (its default Redis clients, from
// REDIS_URL). POST /streams/<id> asks the model (MODEL_URL, an
// OpenAI-compatible /v1) for a streamed answer and relays each chunk's
// text as an SSE event, through resumableStream, so another request for
// the same id could resume it. It listens on 127.0.0.1:PORT and prints
// "ready" once it does.
import http from "node:http";
import { createResumableStreamContext } from "resumable-stream";

const modelURL = process.env.MODEL_URL;
const streamContext = createResumableStreamContext({ waitUntil: null });

// modelStream is the model's answer as a stream of SSE events, one a chunk.
function modelStream() {
  return new ReadableStream({
    async start(controller) {
      const res = await fetch(modelURL + "/chat/completions", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ model: "fake", stream: true, messages: [{ role: "user", content: "stream" }] }),
      });
      const decoder = new TextDecoder();
      let buf = "";
      for await (const part of res.body) {
        buf += decoder.decode(part, { stream: true });
        let end;
        while ((end = buf.indexOf("\n\n")) >= 0) {
          const event = buf.slice(0, end);
          buf = buf.slice(end + 2);
          const data = event.startsWith("data: ") ? event.slice(6) : "";
          if (data === "" || data === "[DONE]") continue;
          const text = JSON.parse(data).choices[0]?.delta?.content;
          if (text) controller.enqueue("event: text.delta\ndata: " + JSON.stringify({ delta: text }) + "\n\n");
        }
      }
      controller.enqueue("event: done\ndata: {}\n\n");
      controller.close();
    },
  });
}

const server = http.createServer(async (req, res) => {
  const id = req.url.startsWith("/streams/") ? req.url.slice("/streams/".length) : "";
  if (req.method !== "POST" || id === "") {
    res.writeHead(404).end();
    return;
  }
  req.resume();
  const stream = await streamContext.resumableStream(id, modelStream);
  if (!stream) {
    res.writeHead(422).end();
    return;
  }
  res.writeHead(200, { "Content-Type": "text/event-stream", "Cache-Control": "no-cache" });
  for await (const chunk of stream) res.write(chunk);
  res.end();
});
server.maxConnections = 0 || Infinity;
server.listen(Number(process.env.PORT), "127.0.0.1", () => console.log("ready"));
