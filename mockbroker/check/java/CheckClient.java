// The Java client of `mockbroker check` (mockbroker/check/javaclient.py starts it).
//
// Theory of operation: one JVM runs every Java client of a check run, each in its own
// thread: idempotent producers (bursts), transactional producers (1-4 values per
// transaction, committed or aborted as the plan says) and read_committed consumers
// (assigning every partition from the beginning, or subscribed in a group). The plan comes
// on stdin, one tab-separated line per item, up to "start":
//     config  KEY  VALUE           bootstrap, topic, partitions, time_left (seconds)
//     producer  NAME  txn|idem  BUDGET  TRANSACTIONAL_ID|-
//     step  NAME  COMMIT(0|1)  PAUSE_MS  P,P,...
//     consumer  NAME  assign|subscribe  GROUP|-
// then the commands "stop-writes" (producers finish their transaction and flush) and
// "stop-reads" (consumers stop); the end of stdin means both. Every event goes to stdout as
// one JSON object per line, stamped with System.nanoTime() ("t", nanoseconds): hello,
// write, ack, txn, session, revoke, read, error, fatal, writers-done, exit. The Java
// client's own logs go to stderr (System.out is redirected there).
//
// Client settings are the defaults except what the workload needs: acks=all and
// idempotence, a transactional.id, isolation.level=read_committed,
// auto.offset.reset=earliest, no auto commit for the assigning reader, and max.block.ms
// of 10 s (the Python clients' call timeout) so that no call outlives the run. Every loop is
// bounded by the deadline (time_left); a transaction left open by a failure is closed by a
// new producer with the same transactional.id (initTransactions fences the old one and
// aborts its transaction). With a broker that finalizes transaction.version 2, kafka-clients
// 4.x uses transactions v2 (KIP-890: EndTxn v5, partitions added by Produce, an epoch bump
// per transaction).

import java.io.BufferedOutputStream;
import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.OutOfOrderSequenceException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.errors.UnsupportedVersionException;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class CheckClient {
    static final long CALL_TIMEOUT_MS = 10_000;  // one blocking client call
    static final int CALL_ATTEMPTS = 5;          // a timed-out commit or abort, retried
    static final int MAX_RESTARTS = 20;          // producers recreated, per producer
    static final long POLL_MS = 200;
    static final long EXIT_MARGIN_NS = 15_000_000_000L;  // past the deadline: halt

    static PrintStream out;
    static volatile boolean stopWrites, stopReads;
    static long deadline;  // System.nanoTime()
    static String bootstrap = "", topic = "";
    static int partitions = 1;
    static final List<KafkaConsumer<String, String>> CONSUMERS = new CopyOnWriteArrayList<>();

    static final class Step {
        int[] partitions;
        boolean commit;
        int pauseMs;
    }

    static final class ProducerPlan {
        String name, transactionalId;
        boolean transactional;
        int budget;
        final List<Step> steps = new ArrayList<>();
    }

    static final class ConsumerPlan {
        String name, group;
        boolean subscribe;
    }

    // -- events --------------------------------------------------------------------------

    static String quote(String s) {
        if (s == null) {
            return "null";
        }
        StringBuilder b = new StringBuilder(s.length() + 2).append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '"' || c == '\\') {
                b.append('\\').append(c);
            } else if (c < 0x20) {
                b.append(String.format("\\u%04x", (int) c));
            } else {
                b.append(c);
            }
        }
        return b.append('"').toString();
    }

    /** One event line: {"e": type, "c": client, "t": now, then the key/value pairs}. */
    static void emit(String type, String client, Object... kv) {
        StringBuilder b = new StringBuilder(128);
        b.append("{\"e\":\"").append(type).append("\",\"c\":").append(quote(client))
                .append(",\"t\":").append(System.nanoTime());
        for (int i = 0; i + 1 < kv.length; i += 2) {
            b.append(',').append(quote((String) kv[i])).append(':');
            Object v = kv[i + 1];
            if (v == null) {
                b.append("null");
            } else if (v instanceof Number || v instanceof Boolean) {
                b.append(v);
            } else if (v instanceof Collection) {
                b.append('[');
                boolean first = true;
                for (Object item : (Collection<?>) v) {
                    b.append(first ? "" : ",").append(quote(String.valueOf(item)));
                    first = false;
                }
                b.append(']');
            } else {
                b.append(quote(String.valueOf(v)));
            }
        }
        b.append('}');
        synchronized (out) {
            out.println(b);
        }
    }

    static void flush() {
        synchronized (out) {
            out.flush();
        }
    }

    static String describe(Throwable e) {
        String message = e.getMessage();
        return e.getClass().getSimpleName() + ": " + (message == null ? "" : message);
    }

    static long timeLeftMs() {
        return (deadline - System.nanoTime()) / 1_000_000;
    }

    static void sleep(long ms) {
        try {
            Thread.sleep(Math.max(0, ms));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    // -- producers -----------------------------------------------------------------------

    static final class Producer implements Runnable {
        final ProducerPlan plan;
        KafkaProducer<String, String> producer;
        int restarts;
        boolean openTxn;  // a transaction may be open on the broker side

        Producer(ProducerPlan plan) {
            this.plan = plan;
        }

        Properties config() {
            Properties p = new Properties();
            p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            p.put(ProducerConfig.CLIENT_ID_CONFIG, plan.name);
            p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
            p.put(ProducerConfig.ACKS_CONFIG, "all");
            p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, Long.toString(CALL_TIMEOUT_MS));
            p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
            p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG,
                    StringSerializer.class.getName());
            if (plan.transactional) {
                p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, plan.transactionalId);
            }
            return p;
        }

        /** A new producer (transactional: initialised, which fences the last one and aborts
         * what it left open); false if none could be made in time. */
        boolean make() {
            close();
            while (timeLeftMs() > 0) {
                try {
                    producer = new KafkaProducer<>(config());
                    if (plan.transactional) {
                        producer.initTransactions();
                        openTxn = false;
                    }
                    return true;
                } catch (KafkaException | IllegalStateException e) {
                    emit("error", plan.name, "err", describe(e));
                    close();
                    sleep(100);
                }
            }
            return false;
        }

        void close() {
            if (producer != null) {
                try {
                    producer.close(Duration.ofMillis(Math.max(0, Math.min(5000, timeLeftMs()))));
                } catch (RuntimeException e) {
                    emit("error", plan.name, "err", describe(e));
                }
                producer = null;
            }
        }

        boolean restart() {
            restarts++;
            return restarts <= MAX_RESTARTS && make();
        }

        Future<RecordMetadata> send(String value, int partition) {
            AtomicBoolean answered = new AtomicBoolean();
            try {
                return producer.send(new ProducerRecord<>(topic, partition, null, value),
                        (metadata, error) -> {
                            if (!answered.compareAndSet(false, true)) {
                                return;
                            }
                            if (error != null) {
                                emit("ack", plan.name, "v", value, "err", describe(error));
                            } else {
                                emit("ack", plan.name, "v", value, "o", metadata.offset());
                            }
                        });
            } catch (RuntimeException e) {
                if (answered.compareAndSet(false, true)) {
                    emit("ack", plan.name, "v", value, "err", describe(e));
                }
                throw e;
            }
        }

        /** Wait for the sends' answers, at most until the call timeout. */
        void await(List<Future<RecordMetadata>> futures) {
            long until = System.nanoTime() + Math.min(CALL_TIMEOUT_MS, Math.max(1000, timeLeftMs()))
                    * 1_000_000;
            for (Future<RecordMetadata> f : futures) {
                try {
                    f.get(Math.max(0, until - System.nanoTime()), TimeUnit.NANOSECONDS);
                } catch (ExecutionException e) {
                    // answered through the callback
                } catch (java.util.concurrent.TimeoutException e) {
                    return;
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
        }

        /** A commit or an abort, again while it times out (the client allows the retry). */
        void retrying(Runnable call) {
            for (int attempt = 0; ; attempt++) {
                try {
                    call.run();
                    return;
                } catch (TimeoutException e) {
                    if (attempt == CALL_ATTEMPTS - 1 || timeLeftMs() <= 0) {
                        throw e;
                    }
                    emit("error", plan.name, "err", describe(e));
                }
            }
        }

        void pause(int ms) {
            if (ms > 0 && !stopWrites) {
                sleep(ms);
            }
        }

        @Override
        public void run() {
            try {
                if (!make()) {
                    emit("fatal", plan.name, "err", "could not start");
                    return;
                }
                if (plan.transactional) {
                    transactions();
                } else {
                    bursts();
                }
            } catch (RuntimeException e) {
                emit("fatal", plan.name, "err", describe(e));
            } finally {
                if (plan.transactional && openTxn && timeLeftMs() > 0) {
                    make();  // fences the last one and aborts what it left open
                }
                close();
            }
        }

        void bursts() {
            int seq = 0, number = 0;
            List<Future<RecordMetadata>> pending = new ArrayList<>();
            while (!stopWrites && seq < plan.budget && timeLeftMs() > 0
                    && number < plan.steps.size()) {
                Step step = plan.steps.get(number++);
                try {
                    for (int i = 0; i < step.partitions.length && seq < plan.budget; i++) {
                        String value = plan.name + "." + seq;
                        emit("write", plan.name, "v", value, "seq", seq, "p", step.partitions[i],
                                "txn", null);
                        seq++;
                        pending.add(send(value, step.partitions[i]));
                    }
                } catch (KafkaException | IllegalStateException e) {
                    emit("error", plan.name, "err", describe(e));
                    if (!restart()) {
                        break;
                    }
                }
                pending.removeIf(Future::isDone);
                pause(step.pauseMs);
            }
            await(pending);
        }

        void transactions() {
            int seq = 0, number = 0;
            while (!stopWrites && seq < plan.budget && timeLeftMs() > 0
                    && number < plan.steps.size()) {
                Step step = plan.steps.get(number);
                String txnId = plan.name + "/" + number;
                number++;
                List<String> values = new ArrayList<>();
                Long commitAt = null;
                String outcome = "unfinished", error = null;
                try {
                    producer.beginTransaction();
                    openTxn = true;
                    List<Future<RecordMetadata>> futures = new ArrayList<>();
                    for (int i = 0; i < step.partitions.length && seq < plan.budget; i++) {
                        String value = plan.name + "." + seq;
                        emit("write", plan.name, "v", value, "seq", seq, "p", step.partitions[i],
                                "txn", txnId);
                        values.add(value);
                        seq++;
                        futures.add(send(value, step.partitions[i]));
                    }
                    if (step.commit) {
                        commitAt = System.nanoTime();
                        retrying(producer::commitTransaction);
                        outcome = "committed";
                    } else {
                        await(futures);  // the aborted values get written
                        retrying(producer::abortTransaction);
                        outcome = "aborted";
                    }
                    openTxn = false;
                } catch (KafkaException | IllegalStateException e) {
                    error = describe(e);
                    emit("error", plan.name, "err", error);
                    boolean fatal = e instanceof ProducerFencedException
                            || e instanceof OutOfOrderSequenceException
                            || e instanceof AuthorizationException
                            || e instanceof UnsupportedVersionException;
                    boolean aborted = false;
                    if (!fatal && !(commitAt != null && e instanceof TimeoutException)) {
                        try {
                            retrying(producer::abortTransaction);
                            aborted = true;
                            openTxn = false;
                        } catch (KafkaException | IllegalStateException again) {
                            emit("error", plan.name, "err", describe(again));
                        }
                    }
                    if (commitAt != null) {
                        outcome = "indeterminate";
                    } else if (aborted) {
                        outcome = "aborted";
                    }
                    if (!aborted && !restart()) {
                        txn(txnId, values, outcome, commitAt, error);
                        break;
                    }
                }
                txn(txnId, values, outcome, commitAt, error);
                pause(step.pauseMs);
            }
        }

        void txn(String id, List<String> values, String outcome, Long commitAt, String error) {
            emit("txn", plan.name, "id", id, "values", values, "outcome", outcome,
                    "commit_at", commitAt, "err", error);
        }
    }

    // -- consumers -----------------------------------------------------------------------

    static final class Consumer implements Runnable {
        final ConsumerPlan plan;

        Consumer(ConsumerPlan plan) {
            this.plan = plan;
        }

        @Override
        public void run() {
            Properties p = new Properties();
            p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            p.put(ConsumerConfig.CLIENT_ID_CONFIG, plan.name);
            p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
            p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
            p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG,
                    StringDeserializer.class.getName());
            p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG,
                    StringDeserializer.class.getName());
            if (plan.subscribe) {
                p.put(ConsumerConfig.GROUP_ID_CONFIG, plan.group);
            } else {
                p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
            }
            KafkaConsumer<String, String> consumer;
            try {
                consumer = new KafkaConsumer<>(p);
            } catch (KafkaException e) {
                emit("fatal", plan.name, "err", describe(e));
                return;
            }
            CONSUMERS.add(consumer);
            try {
                if (plan.subscribe) {
                    consumer.subscribe(List.of(topic), new ConsumerRebalanceListener() {
                        @Override
                        public void onPartitionsRevoked(Collection<TopicPartition> revoked) {
                            for (TopicPartition tp : revoked) {
                                emit("revoke", plan.name, "p", tp.partition());
                            }
                        }

                        @Override
                        public void onPartitionsAssigned(Collection<TopicPartition> assigned) {
                            for (TopicPartition tp : assigned) {
                                emit("session", plan.name, "p", tp.partition(),
                                        "mode", "subscribe", "start", null);
                            }
                        }
                    });
                } else {
                    List<TopicPartition> all = new ArrayList<>();
                    for (int i = 0; i < partitions; i++) {
                        all.add(new TopicPartition(topic, i));
                        emit("session", plan.name, "p", i, "mode", "assign", "start", 0);
                    }
                    consumer.assign(all);
                    consumer.seekToBeginning(all);
                }
                while (!stopReads && timeLeftMs() > 0) {
                    ConsumerRecords<String, String> records;
                    try {
                        records = consumer.poll(Duration.ofMillis(POLL_MS));
                    } catch (WakeupException e) {
                        break;
                    } catch (KafkaException | IllegalStateException e) {
                        emit("error", plan.name, "err", describe(e));
                        sleep(POLL_MS);
                        continue;
                    }
                    for (ConsumerRecord<String, String> r : records) {
                        emit("read", plan.name, "p", r.partition(), "o", r.offset(), "v",
                                r.value() == null ? "" : r.value());
                    }
                }
            } catch (WakeupException e) {
                // stopped
            } catch (RuntimeException e) {
                emit("fatal", plan.name, "err", describe(e));
            } finally {
                try {
                    consumer.close(Duration.ofSeconds(5));
                } catch (RuntimeException e) {
                    emit("error", plan.name, "err", describe(e));
                }
            }
        }
    }

    // -- the process ---------------------------------------------------------------------

    static void stopReading() {
        stopReads = true;
        for (KafkaConsumer<String, String> c : CONSUMERS) {
            c.wakeup();
        }
    }

    static int[] parts(String text) {
        String[] items = text.split(",");
        int[] result = new int[items.length];
        for (int i = 0; i < items.length; i++) {
            result[i] = Integer.parseInt(items[i].trim());
        }
        return result;
    }

    static void join(List<Thread> threads) throws InterruptedException {
        for (Thread t : threads) {
            long left = (deadline + EXIT_MARGIN_NS - System.nanoTime()) / 1_000_000;
            if (left > 0) {
                t.join(left);
            }
        }
    }

    public static void main(String[] args) throws Exception {
        out = new PrintStream(new BufferedOutputStream(new FileOutputStream(FileDescriptor.out),
                1 << 16), false, StandardCharsets.UTF_8);
        System.setOut(System.err);  // whatever else prints goes to stderr
        emit("hello", "java");
        flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in,
                StandardCharsets.UTF_8));
        Map<String, ProducerPlan> producers = new LinkedHashMap<>();
        List<ConsumerPlan> consumers = new ArrayList<>();
        double timeLeft = 60;
        for (String line = in.readLine(); line != null && !line.equals("start");
                line = in.readLine()) {
            String[] f = line.split("\t");
            switch (f[0]) {
                case "config":
                    switch (f[1]) {
                        case "bootstrap": bootstrap = f[2]; break;
                        case "topic": topic = f[2]; break;
                        case "partitions": partitions = Integer.parseInt(f[2]); break;
                        case "time_left": timeLeft = Double.parseDouble(f[2]); break;
                        default: break;
                    }
                    break;
                case "producer": {
                    ProducerPlan p = new ProducerPlan();
                    p.name = f[1];
                    p.transactional = f[2].equals("txn");
                    p.budget = Integer.parseInt(f[3]);
                    p.transactionalId = f[4].equals("-") ? null : f[4];
                    producers.put(p.name, p);
                    break;
                }
                case "step": {
                    Step s = new Step();
                    s.commit = f[2].equals("1");
                    s.pauseMs = Integer.parseInt(f[3]);
                    s.partitions = parts(f[4]);
                    producers.get(f[1]).steps.add(s);
                    break;
                }
                case "consumer": {
                    ConsumerPlan c = new ConsumerPlan();
                    c.name = f[1];
                    c.subscribe = f[2].equals("subscribe");
                    c.group = f[3].equals("-") ? null : f[3];
                    consumers.add(c);
                    break;
                }
                default:
                    break;
            }
        }
        deadline = System.nanoTime() + (long) (timeLeft * 1e9);
        Thread commands = new Thread(() -> {
            try {
                for (String line = in.readLine(); line != null; line = in.readLine()) {
                    if (line.equals("stop-writes")) {
                        stopWrites = true;
                    } else if (line.equals("stop-reads")) {
                        stopReading();
                    }
                }
            } catch (java.io.IOException e) {
                // the end of the commands
            }
            stopWrites = true;  // stdin closed: the run is over
            stopReading();
        }, "commands");
        commands.setDaemon(true);
        commands.start();
        Thread flusher = new Thread(() -> {
            while (true) {
                sleep(20);
                flush();
                if (System.nanoTime() - deadline > EXIT_MARGIN_NS) {
                    emit("fatal", "java", "err", "still running past the deadline: halted");
                    flush();
                    Runtime.getRuntime().halt(3);
                }
            }
        }, "flusher");
        flusher.setDaemon(true);
        flusher.start();
        List<Thread> writers = new ArrayList<>();
        for (ProducerPlan p : producers.values()) {
            writers.add(new Thread(new Producer(p), p.name));
        }
        List<Thread> readers = new ArrayList<>();
        for (ConsumerPlan c : consumers) {
            readers.add(new Thread(new Consumer(c), c.name));
        }
        for (Thread t : writers) {
            t.start();
        }
        for (Thread t : readers) {
            t.start();
        }
        join(writers);
        emit("writers-done", "java");
        flush();
        join(readers);
        emit("exit", "java");
        flush();
        System.exit(0);
    }
}
