import { spawn } from 'node:child_process';

/** A command that serves an app (`npm start`, `svc .`), started in a process group of its own. */
export interface Started {
  port: number;
  output(): string;
  /** Signals the whole group (npm, the svc launcher, the server) and waits for the command to end. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/**
 * Runs `command args` in `cwd` until it prints `listening on port <n>`. The command runs in a group
 * of its own (npm start runs a shell, which runs svc's launcher, which runs the server), so `stop`
 * reaches every process of it and none outlives the test.
 */
export function startCommand(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv, timeoutMs = 60_000): Promise<Started> {
  const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let out = '';
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const signalGroup = (signal: NodeJS.Signals) => {
    try {
      process.kill(-(child.pid as number), signal);
    } catch {
      // the group is gone
    }
  };
  const stop = async (signal: NodeJS.Signals = 'SIGTERM') => {
    signalGroup(signal);
    const timer = setTimeout(() => signalGroup('SIGKILL'), 20_000);
    const code = await exited;
    clearTimeout(timer);
    // npm may end before the server it started: whatever is left of the group goes too.
    signalGroup('SIGKILL');
    return code;
  };
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      void stop('SIGKILL');
      reject(new Error(`${command} ${args.join(' ')}: no "listening on port" in ${timeoutMs / 1000} s:\n${out}`));
    }, timeoutMs);
    const read = (d: Buffer) => {
      out += d.toString();
      const m = /listening on port (\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({ port: Number(m[1]), output: () => out, stop });
      }
    };
    child.stdout.on('data', read);
    child.stderr.on('data', read);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`${command} ${args.join(' ')} exited with ${code}:\n${out}`));
    });
  });
}
