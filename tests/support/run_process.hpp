// Runs a program as a subprocess and captures its stdout, stderr and exit
// status, with a deadline: tests of the ksim binary must fail, not hang,
// when the binary misbehaves. fork/exec/pipes/poll only; no shell is
// involved, so arguments reach the program exactly as given.
#pragma once
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace ksim::test {

struct ProcessResult {
  bool exited = false;     // the process ended through exit(); `status` is valid
  int status = -1;         // its exit status
  int signal = 0;          // the signal that killed it, when !exited
  bool timed_out = false;  // the deadline passed and the process was killed
  std::string out, err;    // everything it wrote to stdout / stderr
};

namespace detail {

[[noreturn]] inline void sys_fail(const char* what) {
  throw std::runtime_error(std::string("run_process: ") + what + ": " + std::strerror(errno));
}

}  // namespace detail

// Runs argv[0] (a path; PATH is not searched) with argv[1..], stdin from
// /dev/null. Kills it with SIGKILL once `timeout` has passed.
inline ProcessResult run_process(const std::vector<std::string>& argv,
                                 std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
  using Clock = std::chrono::steady_clock;
  if (argv.empty()) throw std::invalid_argument("run_process: empty argv");

  // Everything the child needs is prepared before fork(): after it, only
  // async-signal-safe calls are allowed there.
  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);

  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) detail::sys_fail("pipe2");
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    int e = errno;
    close(out_pipe[0]);
    close(out_pipe[1]);
    errno = e;
    detail::sys_fail("pipe2");
  }
  int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
  auto close_all = [&] {
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1], devnull})
      if (fd >= 0) close(fd);
  };
  if (devnull < 0) {
    close_all();
    detail::sys_fail("open /dev/null");
  }

  const Clock::time_point deadline = Clock::now() + timeout;
  pid_t pid = fork();
  if (pid < 0) {
    close_all();
    detail::sys_fail("fork");
  }
  if (pid == 0) {
    // dup2 clears O_CLOEXEC on the copies; the originals close at exec.
    if (dup2(devnull, 0) < 0 || dup2(out_pipe[1], 1) < 0 || dup2(err_pipe[1], 2) < 0) _exit(127);
    execv(cargv[0], cargv.data());
    const char msg[] = "run_process: execv failed\n";
    ssize_t ignored = write(2, msg, sizeof msg - 1);
    (void)ignored;
    _exit(127);
  }

  close(out_pipe[1]);
  close(err_pipe[1]);
  close(devnull);

  ProcessResult r;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&r.out, &r.err};
  int open_fds = 2;
  auto remaining_ms = [&] {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    return left > 0 ? static_cast<int>(std::min<long long>(left, 1'000'000)) : 0;
  };

  while (open_fds > 0) {
    int left = remaining_ms();
    if (left == 0) {
      r.timed_out = true;
      break;
    }
    int n = poll(fds, 2, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
      close(out_pipe[0]);
      close(err_pipe[0]);
      detail::sys_fail("poll");
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char buf[65536];
      ssize_t got = read(fds[i].fd, buf, sizeof buf);
      if (got > 0) {
        sinks[i]->append(buf, static_cast<size_t>(got));
      } else if (got == 0 || errno != EINTR) {
        close(fds[i].fd);
        fds[i].fd = -1;  // poll ignores negative descriptors
        --open_fds;
      }
    }
  }
  for (auto& p : fds)
    if (p.fd >= 0) close(p.fd);

  // The process may close its output and still run on: the deadline holds
  // for the wait too.
  int st = 0;
  while (true) {
    if (r.timed_out) kill(pid, SIGKILL);
    pid_t w = waitpid(pid, &st, r.timed_out ? 0 : WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) detail::sys_fail("waitpid");
    if (w == 0) {
      if (remaining_ms() == 0)
        r.timed_out = true;
      else
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  if (WIFEXITED(st)) {
    r.exited = true;
    r.status = WEXITSTATUS(st);
  } else if (WIFSIGNALED(st)) {
    r.signal = WTERMSIG(st);
  }
  return r;
}

}  // namespace ksim::test
