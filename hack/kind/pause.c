/* The pod sandbox's process: holds the namespaces, reaps orphans, exits on TERM/INT. */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

static void reap(int signal_number) {
  (void)signal_number;
  while (waitpid(-1, 0, WNOHANG) > 0) {
  }
}

static void stop(int signal_number) {
  (void)signal_number;
  _exit(0);
}

int main(void) {
  signal(SIGINT, stop);
  signal(SIGTERM, stop);
  signal(SIGCHLD, reap);
  for (;;) {
    pause();
  }
}
