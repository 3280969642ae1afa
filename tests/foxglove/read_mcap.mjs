// Read an MCAP file with @mcap/core's indexed reader (the way Foxglove opens a file:
// footer, summary, chunk indexes) and print what it holds as one JSON object on stdout:
// {profile, library, metadata, channels: [{id, topic, messageEncoding, metadata,
// schema: {name, encoding, data}}], messages: [{channel, logTime, publishTime, data}]}.
// Zstandard chunks are decompressed with fzstd. Usage: node read_mcap.mjs FILE.mcap
import { readFile } from "node:fs/promises";
import { McapIndexedReader } from "@mcap/core";
import { decompress } from "fzstd";

const bytes = await readFile(process.argv[2]);
const readable = {
  size: async () => BigInt(bytes.length),
  read: async (offset, length) => bytes.subarray(Number(offset), Number(offset + length)),
};
const reader = await McapIndexedReader.Initialize({
  readable,
  decompressHandlers: { zstd: (data, size) => decompress(data, new Uint8Array(Number(size))) },
});
const text = new TextDecoder("utf-8", { fatal: true });
const channels = [...reader.channelsById.values()].map((channel) => {
  const schema = reader.schemasById.get(channel.schemaId);
  return {
    id: channel.id,
    topic: channel.topic,
    messageEncoding: channel.messageEncoding,
    metadata: Object.fromEntries(channel.metadata),
    schema: schema && { name: schema.name, encoding: schema.encoding, data: text.decode(schema.data) },
  };
});
const messages = [];
for await (const message of reader.readMessages()) {
  messages.push({
    channel: message.channelId,
    logTime: message.logTime.toString(),
    publishTime: message.publishTime.toString(),
    data: JSON.parse(text.decode(message.data)),
  });
}
const metadata = [];
for await (const record of reader.readMetadata()) {
  metadata.push({ name: record.name, metadata: Object.fromEntries(record.metadata) });
}
process.stdout.write(
  JSON.stringify({
    profile: reader.header.profile,
    library: reader.header.library,
    metadata,
    channels,
    messages,
  }),
);
