import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;

/**
 * Takes a log directory's lock file the way a Kafka broker does (FileLock.tryLock on a channel
 * opened with CREATE, READ, WRITE). "hold PATH" prints "locked" and keeps the lock until its
 * standard input closes; "try PATH" prints "locked" or "refused" and exits.
 */
public final class DirLock {
    public static void main(String[] args) throws Exception {
        Path path = Paths.get(args[1]);
        try (FileChannel channel = FileChannel.open(path, StandardOpenOption.CREATE, StandardOpenOption.READ,
                StandardOpenOption.WRITE)) {
            FileLock lock = channel.tryLock();
            System.out.println(lock == null ? "refused" : "locked");
            System.out.flush();
            if (lock != null && args[0].equals("hold")) {
                while (System.in.read() != -1) {
                    // hold until the test closes our standard input
                }
            }
        }
    }
}
