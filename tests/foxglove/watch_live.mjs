// A Foxglove viewer built on @foxglove/ws-protocol's client (with the ws package's
// WebSocket): connects to URL, subscribes to the channels whose topics it is given
// (an entry ending in "*" is a prefix), and prints one JSON object a line on stdout:
//   {"event": "serverInfo", "capabilities": [...]}
//   {"event": "advertise", "topics": [...]}
//   {"event": "message", "topic": T, "schemaName": S, "data": <the message's JSON>}
//   {"event": "status", "level": L, "message": M}
//   {"event": "published", "topic": T}   (with --publish TOPIC: it tried to publish)
//   {"event": "close", "code": C}
// Runs until the server closes the connection or it is killed.
// Usage: node watch_live.mjs URL TOPIC... [--publish TOPIC]
import wsProtocol from "@foxglove/ws-protocol";
import WebSocket from "ws";

const { FoxgloveClient } = wsProtocol;

const args = process.argv.slice(2);
const url = args.shift();
const publishAt = args.indexOf("--publish");
const publishTopic = publishAt >= 0 ? args.splice(publishAt, 2)[1] : undefined;
const wanted = args;
const say = (event) => process.stdout.write(JSON.stringify(event) + "\n");
const wants = (topic) =>
  wanted.some((w) => (w.endsWith("*") ? topic.startsWith(w.slice(0, -1)) : topic === w));

// foxglove-sdk servers speak the protocol as "foxglove.sdk.v1" (the same protocol under
// a new name); the client takes whichever subprotocol its WebSocket agreed on.
const client = new FoxgloveClient({
  ws: new WebSocket(url, ["foxglove.sdk.v1", FoxgloveClient.SUPPORTED_SUBPROTOCOL]),
});
const channels = new Map();
const subscriptions = new Map();
const text = new TextDecoder("utf-8", { fatal: true });

client.on("serverInfo", (info) => {
  say({ event: "serverInfo", name: info.name, capabilities: info.capabilities });
  if (publishTopic !== undefined) {
    // A viewer trying to speak into the team: advertise a channel and send on it.
    const id = client.advertise({ topic: publishTopic, encoding: "json", schemaName: "x" });
    const body = { topic: publishTopic, kind: "mission.cancel", sender: "viewer" };
    client.sendMessage(id, new TextEncoder().encode(JSON.stringify(body)));
    say({ event: "published", topic: publishTopic });
  }
});
client.on("advertise", (added) => {
  for (const channel of added) {
    channels.set(channel.id, channel);
    if (wants(channel.topic)) {
      subscriptions.set(client.subscribe(channel.id), channel);
    }
  }
  say({ event: "advertise", topics: added.map((c) => c.topic) });
});
client.on("message", ({ subscriptionId, data }) => {
  const channel = subscriptions.get(subscriptionId);
  const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  say({
    event: "message",
    topic: channel.topic,
    schemaName: channel.schemaName,
    data: JSON.parse(text.decode(bytes)),
  });
});
client.on("status", (status) => say({ event: "status", level: status.level, message: status.message }));
client.on("error", (error) => say({ event: "error", message: String(error) }));
client.on("close", (event) => {
  say({ event: "close", code: event.code });
  process.exit(0);
});
