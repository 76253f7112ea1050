#include "cache/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <ctime>

namespace mlx::core::vulkan::cache {

namespace {

std::string errno_text(const std::string& what, const std::filesystem::path& path, int err) {
  return what + " " + path.string() + ": " + std::strerror(err);
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) {
      ::close(fd_);
    }
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const {
    return fd_;
  }
  // close() can report a deferred write error (NFS, quota), so it is checked on writes.
  int close() {
    int rc = ::close(fd_);
    fd_ = -1;
    return rc;
  }

 private:
  int fd_;
};

}  // namespace

std::string file_type_name(unsigned mode) {
  if (S_ISREG(mode)) {
    return "a regular file";
  }
  if (S_ISFIFO(mode)) {
    return "a FIFO";
  }
  if (S_ISDIR(mode)) {
    return "a directory";
  }
  if (S_ISSOCK(mode)) {
    return "a socket";
  }
  if (S_ISCHR(mode)) {
    return "a character device";
  }
  if (S_ISBLK(mode)) {
    return "a block device";
  }
  if (S_ISLNK(mode)) {
    return "a symbolic link";
  }
  return "a special file";
}

int open_regular(const std::filesystem::path& path, std::string& error, bool& not_regular) {
  error.clear();
  not_regular = false;
  auto refuse = [&](unsigned mode) {
    not_regular = true;
    error = path.string() + " is " + file_type_name(mode) + ", not a regular file";
  };
  // The type first: open() blocks on a FIFO until a writer comes, and opening a device
  // can have side effects.
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    // ENOTDIR: a parent is a regular file, which is as absent as a missing directory.
    if (errno != ENOENT && errno != ENOTDIR) {
      error = errno_text("cannot stat", path, errno);
    }
    return -1;
  }
  if (!S_ISREG(st.st_mode)) {
    refuse(st.st_mode);
    return -1;
  }
  // O_NONBLOCK in case a FIFO took the file's place since the stat; it changes nothing
  // for a regular file.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (errno != ENOENT && errno != ENOTDIR) {
      error = errno_text("cannot open", path, errno);
    }
    return -1;
  }
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    error = errno_text("cannot stat", path, err);
    return -1;
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    refuse(st.st_mode);
    return -1;
  }
  return fd;
}

std::optional<std::vector<uint8_t>> read_file(const std::filesystem::path& path, std::string& error,
                                              uint64_t max_bytes, bool* not_regular) {
  bool irregular = false;
  Fd fd(open_regular(path, error, irregular));
  if (not_regular) {
    *not_regular = irregular;
  }
  if (fd.get() < 0) {
    return std::nullopt;
  }
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) {
    error = errno_text("cannot stat", path, errno);
    return std::nullopt;
  }
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    error = path.string() + " is too large (" + std::to_string(st.st_size) + " bytes)";
    return std::nullopt;
  }
  std::vector<uint8_t> bytes(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::read(fd.get(), bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0) {
      error = errno_text("cannot read", path, errno);
      return std::nullopt;
    }
    if (n == 0) {
      break;  // shrank under us: validation of the shorter content decides
    }
    done += static_cast<size_t>(n);
  }
  bytes.resize(done);
  return bytes;
}

std::optional<std::string> atomic_write(const std::filesystem::path& path,
                                        std::span<const uint8_t> bytes, bool sync) {
  static std::atomic<uint64_t> counter{0};
  std::filesystem::path dir = path.parent_path();
  std::filesystem::path tmp =
      dir / (".tmp-" + path.filename().string() + "-" + std::to_string(::getpid()) + "-" +
             std::to_string(counter.fetch_add(1)));

  Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (fd.get() < 0) {
    return errno_text("cannot create", tmp, errno);
  }
  auto fail = [&](const std::string& message) -> std::optional<std::string> {
    ::unlink(tmp.c_str());
    return message;
  };
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd.get(), bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0) {
      return fail(errno_text("cannot write", tmp, errno));
    }
    done += static_cast<size_t>(n);
  }
  if (sync && ::fsync(fd.get()) != 0) {
    return fail(errno_text("cannot fsync", tmp, errno));
  }
  if (fd.close() != 0) {
    return fail(errno_text("cannot close", tmp, errno));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    return fail(errno_text("cannot rename into", path, errno));
  }
  if (sync) {
    // Makes the rename itself durable; a failure here loses nothing already visible.
    Fd dfd(::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (dfd.get() >= 0) {
      ::fsync(dfd.get());
    }
  }
  return std::nullopt;
}

bool is_temp_name(std::string_view filename) {
  return filename.starts_with(".tmp-");
}

void touch(const std::filesystem::path& path) {
  struct timespec times[2];
  times[0].tv_nsec = UTIME_OMIT;  // atime: left alone (noatime mounts would ignore it anyway)
  times[1].tv_nsec = UTIME_NOW;
  times[0].tv_sec = times[1].tv_sec = 0;
  ::utimensat(AT_FDCWD, path.c_str(), times, 0);
}

int64_t now_ms() {
  struct timespec ts;
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1000 + ts.tv_nsec / 1000000;
}

std::optional<int64_t> mtime_ms(const std::filesystem::path& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    return std::nullopt;
  }
  return int64_t{st.st_mtim.tv_sec} * 1000 + st.st_mtim.tv_nsec / 1000000;
}

std::optional<std::string> make_dirs(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return "cannot create directory " + dir.string() + ": " + ec.message();
  }
  return std::nullopt;
}

}  // namespace mlx::core::vulkan::cache
