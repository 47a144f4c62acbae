import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.io.FileInputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.Future;
import java.util.concurrent.locks.LockSupport;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Produces a file of records to one topic at a steady rate, as an application does: record i is
 * handed to KafkaProducer.send at start + i / rate, with a null timestamp so the producer stamps it.
 *
 * Usage: SteadyProducer BOOTSTRAP TOPIC WARMUP_TOPIC WARMUP_RECORDS RECORDS_FILE RATE PRODUCERS [key=value | @FILE ...]
 * (@FILE: a producer.properties file, loaded in its place among the key=value arguments).
 * RECORDS_FILE holds, per record, int32 key length (-1 for null), key, int32 value length, value.
 * With PRODUCERS > 1 each producer is its own KafkaProducer in its own thread, taking every
 * PRODUCERS-th record at the same overall schedule.  Each producer first sends its share of
 * WARMUP_RECORDS records (the file's, repeated as needed) to WARMUP_TOPIC at once and flushes, so
 * that the measured run meets a sender the JIT has compiled and (when WARMUP_TOPIC is TOPIC) a settled
 * compression ratio estimate, as in a long-running application; the measured records then start
 * at offset WARMUP_RECORDS.
 */
public final class SteadyProducer {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String topic = args[1];
        String warmupTopic = args[2];
        int warmup = Integer.parseInt(args[3]);
        List<byte[][]> records = read(args[4]);
        double rate = Double.parseDouble(args[5]);
        int producers = Integer.parseInt(args[6]);
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("key.serializer", ByteArraySerializer.class.getName());
        props.put("value.serializer", ByteArraySerializer.class.getName());
        for (int i = 7; i < args.length; i++) {
            if (args[i].startsWith("@")) {
                // a properties file, read by java.util.Properties as an application's configuration is
                try (FileInputStream in = new FileInputStream(args[i].substring(1))) {
                    props.load(in);
                }
                continue;
            }
            int eq = args[i].indexOf('=');
            props.put(args[i].substring(0, eq), args[i].substring(eq + 1));
        }
        // Every producer has its metadata before the schedule starts, so the first send does not
        // wait for it and bunch the records behind it.
        List<KafkaProducer<byte[], byte[]>> clients = new ArrayList<>();
        for (int p = 0; p < producers; p++) {
            KafkaProducer<byte[], byte[]> client = new KafkaProducer<>(props);
            client.partitionsFor(topic);
            clients.add(client);
        }
        List<byte[][]> warm = new ArrayList<>();
        for (int i = 0; i < warmup; i++) {
            warm.add(records.get(i % records.size()));
        }
        CyclicBarrier ready = new CyclicBarrier(producers);
        long[] start = new long[1];
        List<Thread> threads = new ArrayList<>();
        List<Throwable> failures = new ArrayList<>();
        for (int p = 0; p < producers; p++) {
            final int first = p;
            final KafkaProducer<byte[], byte[]> client = clients.get(p);
            Thread t = new Thread(() -> {
                try {
                    if (!warm.isEmpty()) {
                        client.partitionsFor(warmupTopic);
                        // As fast as the producer takes them: full batches, so the ratio estimate
                        // settles within the warm-up.
                        run(client, warmupTopic, warm, Double.POSITIVE_INFINITY, System.nanoTime(), first,
                            producers);
                    }
                    synchronized (start) {
                        if (start[0] == 0) {
                            start[0] = System.nanoTime() + 100_000_000L;
                        }
                    }
                    ready.await();
                    try (KafkaProducer<byte[], byte[]> producer = client) {
                        run(producer, topic, records, rate, start[0], first, producers);
                    }
                } catch (Throwable e) {
                    synchronized (failures) {
                        failures.add(e);
                    }
                }
            });
            threads.add(t);
            t.start();
        }
        for (Thread t : threads) {
            t.join();
        }
        if (!failures.isEmpty()) {
            failures.get(0).printStackTrace();
            System.exit(1);
        }
    }

    private static void run(KafkaProducer<byte[], byte[]> client, String topic, List<byte[][]> records, double rate,
                            long start, int first, int step) throws Exception {
        List<Future<RecordMetadata>> sent = new ArrayList<>();
        KafkaProducer<byte[], byte[]> producer = client;
        {
            for (int i = first; i < records.size(); i += step) {
                long due = start + (long) (i * 1e9 / rate);
                long wait;
                while ((wait = due - System.nanoTime()) > 0) {
                    LockSupport.parkNanos(wait);
                }
                byte[][] r = records.get(i);
                sent.add(producer.send(new ProducerRecord<>(topic, null, null, r[0], r[1])));
            }
            producer.flush();
            for (Future<RecordMetadata> f : sent) {
                f.get();
            }
        }
    }

    private static List<byte[][]> read(String path) throws IOException {
        List<byte[][]> out = new ArrayList<>();
        try (DataInputStream in = new DataInputStream(new BufferedInputStream(new FileInputStream(path)))) {
            while (in.available() > 0) {
                out.add(new byte[][] {field(in), field(in)});
            }
        }
        return out;
    }

    private static byte[] field(DataInputStream in) throws IOException {
        int n = in.readInt();
        if (n < 0) {
            return null;
        }
        byte[] b = new byte[n];
        in.readFully(b);
        return b;
    }
}
