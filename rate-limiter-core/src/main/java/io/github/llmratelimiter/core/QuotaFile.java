package io.github.llmratelimiter.core;

import io.github.llmratelimiter.core.internal.Args;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.function.UnaryOperator;
import java.util.zip.CRC32;
import java.util.zip.CheckedInputStream;
import java.util.zip.CheckedOutputStream;

/**
 * The in-memory store's {@link QuotaPersistence}: its {@link QuotaBook} in a file.
 *
 * <p>Format version 1, big-endian ({@link DataOutputStream}):
 *
 * <pre>
 *   8 bytes  magic "LRLQUOTA"
 *   int      version (1)
 *   long     saved at, epoch milliseconds of the wall clock
 *   int      count
 *   count times:
 *     string budget, string key, string quota (stateId)
 *     long   period start, long period end (epoch ms), long used, long fired 1..63, long fired 64..100
 *   long     CRC-32 of every byte before it
 * </pre>
 *
 * A string is its length in chars (an int) followed by its UTF-16 chars, so that any Java string
 * (any key) is read back exactly.
 */
final class QuotaFile implements QuotaPersistence {

  static final byte[] MAGIC = "LRLQUOTA".getBytes(StandardCharsets.US_ASCII);
  static final int VERSION = 1;
  /** Magic, version, saved at, count. */
  static final int HEADER_BYTES = MAGIC.length + 4 + 8 + 4;
  static final int TRAILER_BYTES = 8;
  /** Three empty strings and five longs. */
  private static final int MIN_RECORD_BYTES = 3 * 4 + 5 * 8;

  private final QuotaBook book;
  private final InstantSource wallClock;

  QuotaFile(QuotaBook book, InstantSource wallClock) {
    this.book = book;
    this.wallClock = wallClock;
  }

  /** One counter as written. */
  record Snap(QuotaBook.Id id, long end, long used, long firedLow, long firedHigh) {}

  @Override
  public int save(Path file) throws IOException {
    return save(file, UnaryOperator.identity());
  }

  /** Saves through {@code wrap}, which tests use to fail a write part of the way. */
  synchronized int save(Path file, UnaryOperator<OutputStream> wrap) throws IOException {
    Path target = Args.notNull("file", file).toAbsolutePath();
    Path name = target.getFileName();
    if (name == null) {
      throw new IllegalArgumentException("file must name a file, but was '" + file + "'");
    }
    Path dir = target.getParent();
    long nowMs = wallClock.millis();
    List<Snap> snaps = snapshot(nowMs);
    // created readable and writable by its owner only where the file system has POSIX permissions
    Path tmp = Files.createTempFile(dir, name + ".", ".tmp");
    boolean moved = false;
    try {
      try (FileChannel channel = FileChannel.open(tmp, StandardOpenOption.WRITE)) {
        CheckedOutputStream checked = new CheckedOutputStream(
            new BufferedOutputStream(wrap.apply(Channels.newOutputStream(channel)), 1 << 16),
            new CRC32());
        DataOutputStream out = new DataOutputStream(checked);
        out.write(MAGIC);
        out.writeInt(VERSION);
        out.writeLong(nowMs);
        out.writeInt(snaps.size());
        for (Snap s : snaps) {
          writeString(out, s.id().budget());
          writeString(out, s.id().key());
          writeString(out, s.id().quota());
          out.writeLong(s.id().start());
          out.writeLong(s.end());
          out.writeLong(s.used());
          out.writeLong(s.firedLow());
          out.writeLong(s.firedHigh());
        }
        out.flush();
        out.writeLong(checked.getChecksum().getValue());
        out.flush();
        channel.force(true);
      }
      Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE);
      moved = true;
    } finally {
      if (!moved) {
        Files.deleteIfExists(tmp);
      }
    }
    syncDirectory(dir);
    return snaps.size();
  }

  /** Every counter still kept at {@code nowMs}, each read in one step. */
  List<Snap> snapshot(long nowMs) {
    List<Snap> snaps = new ArrayList<>();
    for (Map.Entry<QuotaBook.Id, QuotaBook.Counter> e : book.all().entrySet()) {
      QuotaBook.Counter c = e.getValue();
      if (kept(c.end, nowMs)) {
        long[] state = c.state();
        snaps.add(new Snap(e.getKey(), c.end, state[0], state[1], state[2]));
      }
    }
    return snaps;
  }

  private static boolean kept(long end, long nowMs) {
    return end > nowMs - QuotaBook.RETENTION_MS;
  }

  private static void writeString(DataOutputStream out, String s) throws IOException {
    out.writeInt(s.length());
    out.writeChars(s);
  }

  /** Makes the move durable where the platform can force a directory; elsewhere does nothing. */
  private static void syncDirectory(Path dir) {
    try (FileChannel d = FileChannel.open(dir, StandardOpenOption.READ)) {
      d.force(true);
    } catch (IOException | RuntimeException e) {
      // a directory cannot be opened or forced here (Windows): the move is as durable as it gets
    }
  }

  @Override
  public synchronized int load(Path file) {
    Args.notNull("file", file);
    List<Snap> snaps;
    try {
      snaps = read(file);
    } catch (NoSuchFileException e) {
      return 0;
    } catch (EOFException e) {
      throw new QuotaFileException(file, "is truncated", e);
    } catch (IOException e) {
      throw new QuotaFileException(file, "cannot be read (" + e + ")", e);
    }
    long nowMs = wallClock.millis();
    int n = 0;
    for (Snap s : snaps) {
      if (kept(s.end(), nowMs)) {
        book.restore(s.id(), s.end(), s.used(), s.firedLow(), s.firedHigh());
        n++;
      }
    }
    return n;
  }

  /** Reads and checks the whole file; restores nothing. */
  private static List<Snap> read(Path file) throws IOException {
    long size;
    try (DataInputStream in =
        new DataInputStream(new BufferedInputStream(Files.newInputStream(file)))) {
      size = Files.size(file);
      byte[] magic = new byte[MAGIC.length];
      int got = in.readNBytes(magic, 0, magic.length);
      if (got < magic.length || !Arrays.equals(magic, MAGIC)) {
        throw new QuotaFileException(file, "is not a quota file of this rate limiter (it does not"
            + " start with \"LRLQUOTA\"; " + size + " bytes)", null);
      }
      int version = in.readInt();
      if (version != VERSION) {
        throw new QuotaFileException(file, "has format version " + version + ", but this version"
            + " of the rate limiter reads version " + VERSION + " only", null);
      }
    }
    if (size < HEADER_BYTES + TRAILER_BYTES) {
      throw new QuotaFileException(file, "is truncated (" + size + " bytes)", null);
    }
    checkCrc(file, size);
    return parse(file, size);
  }

  /** Throws unless the trailer is the CRC-32 of the bytes before it. */
  private static void checkCrc(Path file, long size) throws IOException {
    CRC32 crc = new CRC32();
    long stored;
    try (InputStream raw = new BufferedInputStream(Files.newInputStream(file), 1 << 16)) {
      CheckedInputStream body = new CheckedInputStream(raw, crc);
      byte[] buf = new byte[1 << 16];
      long left = size - TRAILER_BYTES;
      while (left > 0) {
        int r = body.read(buf, 0, (int) Math.min(buf.length, left));
        if (r < 0) {
          throw new EOFException();
        }
        left -= r;
      }
      stored = new DataInputStream(raw).readLong();
    }
    if (stored != crc.getValue()) {
      throw new QuotaFileException(file, "is corrupt or truncated (its CRC-32 does not match its"
          + " content)", null);
    }
  }

  /** Parses a file whose checksum matched. */
  private static List<Snap> parse(Path file, long size) throws IOException {
    try (DataInputStream in =
        new DataInputStream(new BufferedInputStream(Files.newInputStream(file), 1 << 16))) {
      in.skipNBytes(MAGIC.length + 4 + 8);
      int count = in.readInt();
      long room = size - HEADER_BYTES - TRAILER_BYTES;
      if (count < 0 || (long) count * MIN_RECORD_BYTES > room) {
        throw corrupt(file, "a count of " + count + " counters in " + size + " bytes");
      }
      List<Snap> snaps = new ArrayList<>(count);
      for (int i = 0; i < count; i++) {
        String budget = readString(file, in, room);
        String key = readString(file, in, room);
        String quota = readString(file, in, room);
        long start = in.readLong();
        long end = in.readLong();
        long used = in.readLong();
        long firedLow = in.readLong();
        long firedHigh = in.readLong();
        if (budget.isBlank() || key.isBlank() || quota.isBlank() || end <= start || used < 0) {
          throw corrupt(file, "counter " + i + " (its period " + start + ".." + end + ", used "
              + used + ")");
        }
        snaps.add(new Snap(new QuotaBook.Id(budget, key, quota, start), end, used, firedLow,
            firedHigh));
      }
      in.skipNBytes(TRAILER_BYTES);
      if (in.read() != -1) {
        throw corrupt(file, "bytes after its checksum");
      }
      return snaps;
    }
  }

  private static String readString(Path file, DataInputStream in, long room) throws IOException {
    int length = in.readInt();
    if (length < 0 || 2L * length > room) {
      throw corrupt(file, "a string of " + length + " chars");
    }
    char[] chars = new char[length];
    for (int i = 0; i < length; i++) {
      chars[i] = in.readChar();
    }
    return new String(chars);
  }

  private static QuotaFileException corrupt(Path file, String what) {
    return new QuotaFileException(file, "is corrupt: it holds " + what, null);
  }
}
