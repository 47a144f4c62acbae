import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Map;

/**
 * The oracle's verify (../shared/oracle, KafkaOracle.verify without --strict) over many files in one JVM:
 * each path read from standard input gets its canonical document written beside it as PATH.java.json,
 * an {"error": ...} document when the Kafka client throws.  Compiled against the oracle's classes.
 */
public final class OracleMany {
    private OracleMany() {}

    public static void main(String[] args) throws Exception {
        java.io.BufferedReader in = new java.io.BufferedReader(
                new java.io.InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        int done = 0;
        while ((line = in.readLine()) != null) {
            if (line.isEmpty())
                continue;
            Path path = Paths.get(line);
            byte[] bytes = Files.readAllBytes(path);
            Dump d = new Dump();
            Map<String, Object> result;
            try {
                result = d.dump(ByteBuffer.wrap(bytes));
            } catch (Throwable t) {
                result = Dump.error(t, d.currentPosition, d.currentBatch);
            }
            Files.write(Paths.get(line + ".java.json"), Json.write(result, Dump.COMPACT_DEPTH)
                    .getBytes(StandardCharsets.UTF_8));
            done++;
        }
        System.out.println(done);
    }
}
