import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { cp, mkdir, readFile, readdir } from 'node:fs/promises';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import { PATH, run } from '../apps/server/test/packedPackages.js';

// Reads docs/deploy/Dockerfile into stages and runs what it says without Docker: each stage is a
// folder, its WORKDIR mapped into that folder. Only the instructions the file uses are known; any
// other instruction fails the test, so the Dockerfile cannot grow a step the test skips.

export interface Instruction {
  op: string;
  /** The text after the instruction and its flags. */
  args: string;
  flags: Record<string, string>;
  /** The exec (JSON array) form, when the instruction has one. */
  exec?: string[];
}

export interface Stage {
  from: string;
  name?: string;
  steps: Instruction[];
}

const KNOWN = new Set(['FROM', 'WORKDIR', 'COPY', 'RUN', 'ENV', 'USER', 'EXPOSE', 'VOLUME', 'HEALTHCHECK', 'STOPSIGNAL', 'CMD']);

export function parseDockerfile(text: string): Stage[] {
  const lines: string[] = [];
  let pending = '';
  for (const raw of text.split('\n')) {
    if (/^\s*#/.test(raw)) continue;
    if (raw.endsWith('\\')) {
      pending += `${raw.slice(0, -1)} `;
      continue;
    }
    const line = (pending + raw).trim();
    pending = '';
    if (line) lines.push(line);
  }
  const stages: Stage[] = [];
  for (const line of lines) {
    const [, opText = '', rest = ''] = /^(\S+)\s*(.*)$/.exec(line) as RegExpExecArray;
    const op = opText.toUpperCase();
    if (!KNOWN.has(op)) throw new Error(`the Dockerfile uses ${op}, which the test does not know how to run`);
    let args = rest;
    const flags: Record<string, string> = {};
    for (let m = /^--([a-z-]+)=(\S+)\s+/.exec(args); m; m = /^--([a-z-]+)=(\S+)\s+/.exec(args)) {
      flags[m[1] as string] = m[2] as string;
      args = args.slice(m[0].length);
    }
    if (op === 'FROM') {
      const [from = '', as, name] = args.split(/\s+/);
      stages.push({ from, name: as?.toUpperCase() === 'AS' ? name : undefined, steps: [] });
      continue;
    }
    const stage = stages.at(-1);
    if (!stage) throw new Error(`${op} before FROM`);
    const step: Instruction = { op, args, flags };
    const execText = op === 'HEALTHCHECK' ? args.replace(/^CMD\s+/, '') : args;
    if (execText.startsWith('[')) step.exec = JSON.parse(execText) as string[];
    stage.steps.push(step);
  }
  return stages;
}

/** ENV lines (the key=value form) of a stage. */
export function stageEnv(stage: Stage): Record<string, string> {
  const env: Record<string, string> = {};
  for (const step of stage.steps.filter((s) => s.op === 'ENV')) {
    for (const [, key, value] of step.args.matchAll(/([A-Za-z_][A-Za-z0-9_]*)=("[^"]*"|\S+)/g)) env[key as string] = (value as string).replace(/^"|"$/g, '');
  }
  return env;
}

/** Copies `from` into `to` except the names .dockerignore lists (top-level names only: what this file uses). */
export async function copyContext(from: string, to: string, ignored: readonly string[]): Promise<void> {
  await mkdir(to, { recursive: true });
  for (const entry of await readdir(from)) {
    if (ignored.includes(entry)) continue;
    await cp(join(from, entry), join(to, entry), { recursive: true });
  }
}

export async function dockerignore(file: string): Promise<string[]> {
  return (await readFile(file, 'utf8'))
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'))
    .map((l) => l.replace(/^\/|\/$/g, ''));
}

/** What the image would run: the last stage's folder, environment, CMD, HEALTHCHECK and STOPSIGNAL. */
export interface Image {
  workdir: string;
  env: Record<string, string>;
  cmd: string[];
  healthcheck: string[];
  stopSignal: NodeJS.Signals;
}

const me = userInfo();

/**
 * Runs the Dockerfile's stages in folders under `root`, with `context` as the build context;
 * `runEnv` is what the machine that builds gives RUN steps beside the stage's ENV (a registry).
 */
export async function buildImage(stages: Stage[], root: string, context: string, runEnv: Record<string, string> = {}): Promise<Image> {
  const ignored = await dockerignore(join(context, '.dockerignore'));
  const roots = new Map<string, string>();
  let image: Image | undefined;
  for (const [index, stage] of stages.entries()) {
    const stageRoot = join(root, `stage-${index}`);
    await mkdir(stageRoot, { recursive: true });
    if (stage.name) roots.set(stage.name, stageRoot);
    let workdir = stageRoot;
    const env: Record<string, string> = {};
    const built: Image = { workdir, env, cmd: [], healthcheck: [], stopSignal: 'SIGTERM' };
    for (const step of stage.steps) {
      switch (step.op) {
        case 'WORKDIR':
          workdir = built.workdir = join(stageRoot, step.args);
          await mkdir(workdir, { recursive: true });
          break;
        case 'ENV':
          Object.assign(env, stageEnv({ ...stage, steps: [step] }));
          break;
        case 'COPY': {
          const parts = step.args.split(/\s+/);
          const dest = join(workdir, parts.pop() as string);
          for (const source of parts) {
            if (step.flags.from) {
              const fromRoot = roots.get(step.flags.from);
              if (!fromRoot) throw new Error(`COPY --from=${step.flags.from}: no such stage`);
              await cp(join(fromRoot, source), dest, { recursive: true });
            } else if (source === '.') {
              await copyContext(context, dest, ignored);
            } else {
              // package-lock.json*: the optional-file glob of the deps stage.
              const pattern = new RegExp(`^${source.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*')}$`);
              for (const name of (await readdir(context)).filter((n) => pattern.test(n))) await cp(join(context, name), join(dest, name));
            }
          }
          break;
        }
        case 'RUN': {
          // The image's `node` user is this test's user here.
          const command = step.args.replaceAll('node:node', `${me.uid}:${me.gid}`);
          const done = await run('sh', ['-c', command], workdir, { ...runEnv, ...env });
          if (done.code !== 0) throw new Error(`RUN ${command} failed:\n${done.out}`);
          break;
        }
        case 'CMD':
          built.cmd = step.exec ?? ['sh', '-c', step.args];
          break;
        case 'HEALTHCHECK':
          built.healthcheck = step.exec ?? ['sh', '-c', step.args.replace(/^CMD\s+/, '')];
          break;
        case 'STOPSIGNAL':
          built.stopSignal = step.args as NodeJS.Signals;
          break;
        default:
          // USER, EXPOSE, VOLUME: what the container runtime does with them, nothing to run here.
          break;
      }
    }
    image = built;
  }
  if (!image) throw new Error('the Dockerfile has no stage');
  return image;
}

/** Starts the image's CMD with `env` on top of the image's; resolves with the port it listens on. */
export function startImage(image: Image, env: Record<string, string>): Promise<{ child: ChildProcess; port: number; out: () => string }> {
  const [command, ...args] = image.cmd;
  if (command === undefined) throw new Error('the image has no CMD');
  const child = spawn(command === 'node' ? process.execPath : command, args, { cwd: image.workdir, env: { PATH, HOME: process.env.HOME ?? '/tmp', ...image.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no start in 30 s:\n${out}`)), 30_000);
    const read = (d: Buffer) => {
      out += d.toString();
      const m = /listening on port (\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({ child, port: Number(m[1]), out: () => out });
      }
    };
    child.stdout?.on('data', read);
    child.stderr?.on('data', read);
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the image's CMD exited with ${code}:\n${out}`));
    });
  });
}

export function stopImage(child: ChildProcess, signal: NodeJS.Signals): Promise<number | null> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve(child.exitCode);
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.removeAllListeners('exit');
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve(code);
    });
    child.kill(signal);
  });
}
