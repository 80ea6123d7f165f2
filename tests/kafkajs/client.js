// kafkajs driver for tests/clients/test_kafkajs.py.
//
// Usage: node client.js COMMAND < spec.json   (one JSON object on stdin)
// Prints one JSON object on stdout; kafkajs' own log lines go to stderr.
// Bytes cross the boundary base64-encoded; null stays null. Headers are a list of
// [name, base64] pairs (a name may repeat); kafkajs takes them as an object whose values
// may be arrays, so repeated names are grouped in first-seen order.
//
// Commands:
//   produce  {brokers, topic, partitions, messages: [{partition, key, value, headers}]}
//            creates the topic (admin, `partitions` partitions), sends at acks=all in order;
//            answers {offsets: [[partition, offset], ...]} in message order.
//   consume  {brokers, topic, groupId, expected}
//            one consumer in a group from the beginning until `expected` messages arrived;
//            answers {messages: [...], committed: [[partition, offset], ...]}.
//   group    {brokers, topic, partitions, groupId, consumers, messages}
//            creates the topic, starts `consumers` consumers in one group, waits until the
//            group is stable (their assignments split every partition between them), then
//            produces `messages` and reads them back; answers {members: [{memberId,
//            assignment, messages}], committed}.
//   roundtrip {brokers, topic, messages, groupId, ssl?, sasl?}
//            produces `messages` to an existing topic, then one consumer in a group reads
//            them back; answers {offsets, messages}.
//   attempt  {brokers, topic, messages, ssl?, sasl?}
//            produces and reports how it failed instead of failing: {error: {name, type,
//            code, causes: [name, ...]}} or {error: null, offsets}.
// Any spec may carry `ssl: {ca: PATH}` (the CA to trust) and `sasl: {mechanism, username,
// password}` or `sasl: {mechanism: 'oauthbearer', token}` (the token the provider returns).
// Every wait is bounded: the whole run ends with exit code 1 after TIMEOUT_MS.

'use strict';

const fs = require('fs');
const { Kafka, Partitioners, logLevel } = require('kafkajs');

const TIMEOUT_MS = 45000;
const GRACE_MS = 300; // keep reading this long after the expected count: duplicates show

const log = (...args) => process.stderr.write(`${args.join(' ')}\n`);

function security(spec) {
  const out = {};
  if (spec && spec.ssl) out.ssl = { ca: [fs.readFileSync(spec.ssl.ca)] };
  if (spec && spec.sasl) {
    const { mechanism, token, ...credentials } = spec.sasl;
    out.sasl = mechanism === 'oauthbearer'
      ? { mechanism, oauthBearerProvider: async () => ({ value: token }) }
      : { mechanism, ...credentials };
  }
  return out;
}

function kafka(brokers, clientId, spec) {
  return new Kafka({
    clientId,
    brokers: brokers.split(','),
    ...security(spec),
    logLevel: logLevel.WARN,
    logCreator: () => ({ namespace, level, log: entry }) =>
      log(`[kafkajs ${level} ${namespace}] ${JSON.stringify(entry)}`),
    retry: { retries: 8, initialRetryTime: 100, maxRetryTime: 1000 },
  });
}

const b64 = (buf) => (buf === null || buf === undefined ? null : Buffer.from(buf).toString('base64'));
const unb64 = (text) => (text === null || text === undefined ? null : Buffer.from(text, 'base64'));

function toKafkaHeaders(pairs) {
  const out = {};
  for (const [name, value] of pairs || []) {
    const buf = unb64(value);
    if (!(name in out)) out[name] = buf;
    else if (Array.isArray(out[name])) out[name].push(buf);
    else out[name] = [out[name], buf];
  }
  return out;
}

function fromKafkaHeaders(headers) {
  const out = [];
  for (const [name, value] of Object.entries(headers || {})) {
    for (const v of Array.isArray(value) ? value : [value]) out.push([name, b64(v)]);
  }
  return out;
}

function record(partition, message) {
  return {
    partition,
    offset: Number(message.offset),
    key: b64(message.key),
    value: b64(message.value),
    headers: fromKafkaHeaders(message.headers),
  };
}

async function until(condition, what, stepMs = 20) {
  const deadline = Date.now() + TIMEOUT_MS;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, stepMs));
  }
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function createTopic(client, topic, partitions) {
  const admin = client.admin();
  await admin.connect();
  try {
    const created = await admin.createTopics({
      topics: [{ topic, numPartitions: partitions }],
      waitForLeaders: true,
    });
    if (!created) throw new Error(`topic ${topic} already exists`);
  } finally {
    await admin.disconnect();
  }
}

async function send(client, topic, messages) {
  // explicit partitions everywhere; naming the partitioner also silences its v2 notice
  const producer = client.producer({
    allowAutoTopicCreation: false, createPartitioner: Partitioners.DefaultPartitioner,
  });
  await producer.connect();
  const offsets = [];
  try {
    // one send per message keeps the acknowledged order and offsets exact
    for (const m of messages) {
      const [meta] = await producer.send({
        topic,
        acks: -1,
        messages: [{
          partition: m.partition, key: unb64(m.key), value: unb64(m.value),
          headers: toKafkaHeaders(m.headers),
        }],
      });
      offsets.push([meta.partition, Number(meta.baseOffset)]);
    }
  } finally {
    await producer.disconnect();
  }
  return offsets;
}

async function committedOffsets(client, groupId, topic) {
  const admin = client.admin();
  await admin.connect();
  try {
    const [entry] = await admin.fetchOffsets({ groupId, topics: [topic] });
    return entry.partitions.map((p) => [p.partition, Number(p.offset)])
      .sort((a, b) => a[0] - b[0]);
  } finally {
    await admin.disconnect();
  }
}

function newConsumer(client, groupId) {
  return client.consumer({
    groupId,
    maxWaitTimeInMs: 100, // short fetch waits: disconnect does not sit out a long poll
    heartbeatInterval: 300, // members learn of a rebalance quickly
    sessionTimeout: 10000,
    rebalanceTimeout: 10000,
  });
}

async function readBack(client, spec) {
  const consumer = newConsumer(client, spec.groupId);
  const messages = [];
  await consumer.connect();
  try {
    await consumer.subscribe({ topics: [spec.topic], fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ partition, message }) => { messages.push(record(partition, message)); },
    });
    await until(() => messages.length >= spec.messages.length, `${spec.messages.length} messages`);
    await sleep(GRACE_MS);
  } finally {
    await consumer.disconnect();
  }
  return messages;
}

function describeError(err) {
  const causes = [];
  for (let e = err.originalError || err.cause; e && causes.length < 10; e = e.originalError || e.cause) {
    causes.push(e.name);
  }
  return { name: err.name, type: err.type || null, code: err.code === undefined ? null : err.code, causes };
}

const commands = {
  async roundtrip(spec) {
    const client = kafka(spec.brokers, 'kafkajs-secure', spec);
    const offsets = await send(client, spec.topic, spec.messages);
    return { offsets, messages: await readBack(client, spec) };
  },

  async attempt(spec) {
    const client = kafka(spec.brokers, 'kafkajs-attempt', spec);
    try {
      return { error: null, offsets: await send(client, spec.topic, spec.messages) };
    } catch (err) {
      log(`client.js attempt: ${err && err.stack ? err.stack : err}`);
      return { error: describeError(err) };
    }
  },

  async produce(spec) {
    const client = kafka(spec.brokers, 'kafkajs-producer');
    await createTopic(client, spec.topic, spec.partitions);
    return { offsets: await send(client, spec.topic, spec.messages) };
  },

  async consume(spec) {
    const client = kafka(spec.brokers, 'kafkajs-consumer');
    const consumer = newConsumer(client, spec.groupId);
    const messages = [];
    await consumer.connect();
    try {
      await consumer.subscribe({ topics: [spec.topic], fromBeginning: true });
      await consumer.run({
        eachMessage: async ({ partition, message }) => { messages.push(record(partition, message)); },
      });
      await until(() => messages.length >= spec.expected, `${spec.expected} messages`);
      await sleep(GRACE_MS);
    } finally {
      await consumer.disconnect(); // commits the offsets consumed (autoCommit)
    }
    return { messages, committed: await committedOffsets(client, spec.groupId, spec.topic) };
  },

  async group(spec) {
    const client = kafka(spec.brokers, 'kafkajs-group');
    await createTopic(client, spec.topic, spec.partitions);
    const members = [];
    for (let i = 0; i < spec.consumers; i += 1) {
      const member = { consumer: newConsumer(client, spec.groupId), memberId: null, assignment: [], messages: [] };
      member.consumer.on(member.consumer.events.GROUP_JOIN, ({ payload }) => {
        member.memberId = payload.memberId;
        member.assignment = (payload.memberAssignment[spec.topic] || []).slice().sort((a, b) => a - b);
      });
      members.push(member);
    }
    const stable = () => {
      const all = members.flatMap((m) => m.assignment);
      return members.every((m) => m.memberId && m.assignment.length > 0)
        && new Set(members.map((m) => m.memberId)).size === members.length
        && all.length === spec.partitions && new Set(all).size === spec.partitions;
    };
    const total = () => members.reduce((n, m) => n + m.messages.length, 0);
    let snapshot = null;
    try {
      await Promise.all(members.map(async (m) => {
        await m.consumer.connect();
        await m.consumer.subscribe({ topics: [spec.topic], fromBeginning: true });
        await m.consumer.run({
          eachMessage: async ({ partition, message }) => { m.messages.push(record(partition, message)); },
        });
      }));
      await until(stable, 'a stable group with every partition assigned');
      await send(client, spec.topic, spec.messages);
      await until(() => total() >= spec.messages.length, `${spec.messages.length} messages`);
      await sleep(GRACE_MS);
      if (!stable()) throw new Error('the group rebalanced while consuming');
      // the split while consuming: as the first member leaves, the other rejoins alone
      snapshot = members.map((m) => ({ memberId: m.memberId, assignment: m.assignment.slice() }));
    } finally {
      await Promise.all(members.map((m) => m.consumer.disconnect()));
    }
    return {
      members: snapshot.map((s, i) => ({ ...s, messages: members[i].messages })),
      committed: await committedOffsets(client, spec.groupId, spec.topic),
    };
  },
};

async function main() {
  const command = commands[process.argv[2]];
  if (!command) throw new Error(`unknown command ${process.argv[2]}; one of ${Object.keys(commands)}`);
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  const spec = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  const timer = setTimeout(() => { log(`client.js: no result after ${TIMEOUT_MS} ms`); process.exit(1); }, TIMEOUT_MS + 10000);
  const result = await command(spec);
  clearTimeout(timer);
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

main().catch((err) => {
  log(`client.js: ${err && err.stack ? err.stack : err}`);
  process.exit(1);
});
