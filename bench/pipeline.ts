/**
 * Pipeline-parallel GPT training (B.6 of research/anchors-dl.md): tokens/s of the stages on --devices
 * (1F1B, then GPipe) beside, in the same process, (a) plain training of the whole batch on one device
 * and (b) the same micro-batches accumulated on one device (a one-stage pipeline: isolates the pipeline's
 * overlap from the cost of smaller GEMMs). From the runtime's trace: each device's measured idle share
 * over the timed steps, each stage's forward/backward time per micro-batch and the transfer time; the
 * schedule simulated with those times gives the bubble and makespan two separate devices would show,
 * printed beside the theoretical bubble (p − 1)/(m + p − 1).
 *
 * Which layouts mean what: stages on two GPUs (cuda0,cuda1) is the B.6 figure. Two stages on one GPU
 * (cuda0,cuda0) runs every code path (the task graph, the schedule, the tied head) but the GPU is shared,
 * so its idle share measures only the pipeline's host/dependency stalls, and the simulated makespan is a
 * prediction for two GPUs from stage times measured on one. cpu,cuda0 is correct but meaningless for
 * speed (the CPU stage is ~1000× slower). --sim n puts the stages on n emulated devices (the sim backend,
 * paced in wall time at --sim-flops, kernels not run): the stages really overlap, on any machine, so the
 * measured idle can be set against the simulated bubble where two GPUs are not lent (the host's submit
 * cost included, which is the point of the comparison).
 *   node dist/bench/pipeline.js [--preset gpt2-medium] [--layers n] [--batch 64] [--micro 8] [--seq 1024]
 *     [--devices cuda0,cuda1 | --sim 2 [--sim-flops 1e9]] [--split 12,12] [--precision bf16] [--steps 8]
 *     [--single-batch 16] [--schedules 1f1b,gpipe]
 */
import { Runtime, simBackend, type Observer, type TaskEvent, type TransferEvent } from 'tandem';
import {
  PipelineTrainer,
  gptConfig,
  Trainer,
  simulateSchedule,
  theoreticalBubble,
  type PassRecord,
  type Precision,
  type ScheduleKind,
  type StepReport,
  type TrainSpec,
} from 'tandem/nn';
import { intOption, parse } from '../src/cli/output.js';

const { values } = parse(process.argv.slice(2), {
  preset: { type: 'string', default: 'gpt2-medium' },
  batch: { type: 'string' },
  micro: { type: 'string' },
  seq: { type: 'string' },
  devices: { type: 'string', default: 'cuda0,cuda1' },
  split: { type: 'string' },
  precision: { type: 'string', default: 'bf16' },
  steps: { type: 'string' },
  'single-batch': { type: 'string' },
  schedules: { type: 'string', default: '1f1b,gpipe' },
  // Emulated GPUs (no GPU needed): n sim devices paced in wall time at this FLOP rate, kernels not run.
  sim: { type: 'string' },
  layers: { type: 'string' },
  'sim-flops': { type: 'string', default: '2e11' },
});
const batch = intOption(values['batch'], 'batch', 64);
const micro = intOption(values['micro'], 'micro', 8);
const steps = intOption(values['steps'], 'steps', 8);
const warm = Math.min(3, steps - 1);
const simCount = values['sim'] === undefined ? 0 : intOption(values['sim'], 'sim', 2, 1, 16);
const devices =
  simCount > 0 ? Array.from({ length: simCount }, (_, i) => `sim${i}`) : String(values['devices']).split(',');
const split = values['split'] === undefined ? undefined : String(values['split']).split(',').map(Number);
const kinds = [...new Set(devices.map((d) => d.replace(/\d+$/, '')))];

const rt = await Runtime.create({
  backends:
    simCount > 0
      ? [
          simBackend({
            devices: devices.map((id) => ({
              id,
              type: 'gpu' as const,
              depth: 256,
              flops: Number(values['sim-flops']),
              launchUs: 5,
            })),
            compute: false,
            paced: { bandwidth: 50e9, latencyUs: 10 },
          }),
        ]
      : kinds,
  calibrate: false,
  log: () => undefined,
});
const present = rt.devices.map((d) => d.info.id);
const missing = devices.filter((d) => !rt.devices.some((x) => x.info.id === d || x.info.kind === d));
if (missing.length > 0) {
  console.log(
    JSON.stringify({ skipped: `devices ${missing.join(',')} are not open (open: ${present.join(',')})` }),
  );
  await rt.close();
  process.exit(0);
}

const spec = (b: number): TrainSpec => ({
  model: 'gpt',
  preset: String(values['preset']),
  ...(values['layers'] === undefined ? {} : { gpt: { layers: intOption(values['layers'], 'layers', 1) } }),
  steps,
  batch: b,
  ...(values['seq'] === undefined ? {} : { seqLen: Number(values['seq']) }),
  precision: values['precision'] as Precision,
  lr: 3e-4,
  seed: 1,
});
const vocab = gptConfig(String(values['preset'])).vocab;
const seq = values['seq'] === undefined ? gptConfig(String(values['preset'])).context : Number(values['seq']);
let seed = 12345;
const tokens = Int32Array.from({ length: 1 << 21 }, () => {
  seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
  return seed % vocab;
});
const data = { kind: 'tokens' as const, train: tokens };
const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s[Math.floor(s.length / 2)]!;
};
const timed = (reports: StepReport[]): { stepMs: number; tokPerS: number; loss: number } => {
  const r = reports.slice(warm);
  const stepMs = median(r.map((x) => x.stepMs));
  return { stepMs, tokPerS: median(r.map((x) => x.throughput)), loss: reports[reports.length - 1]!.loss };
};

/** Busy time of the union of [start, end) intervals. */
function union(spans: [number, number][]): number {
  spans.sort((a, b) => a[0] - b[0]);
  let total = 0;
  let cur: [number, number] | null = null;
  for (const [s, e] of spans) {
    if (cur === null || s > cur[1]) {
      if (cur !== null) total += cur[1] - cur[0];
      cur = [s, e];
    } else cur[1] = Math.max(cur[1], e);
  }
  return cur === null ? total : total + cur[1] - cur[0];
}

async function runSingle(): Promise<void> {
  let b = intOption(values['single-batch'], 'single-batch', batch);
  for (;;) {
    try {
      const trainer = new Trainer(rt, { ...spec(b), device: devices[0]! }, data);
      const reports: StepReport[] = [];
      await trainer.run((r) => reports.push(r));
      trainer.optimizer.dispose();
      for (const v of trainer.nn.parameters) {
        rt.free(v.data);
        if (v.grad !== null) rt.free(v.grad);
      }
      console.log(JSON.stringify({ mode: 'single', device: devices[0], batch: b, ...timed(reports) }));
      return;
    } catch (e) {
      if ((e as { code?: string }).code !== 'TANDEM_ERR_OUT_OF_MEMORY' || b <= 1) throw e;
      b = Math.floor(b / 2);
    }
  }
}

async function runPipeline(devs: string[], schedule: ScheduleKind, label: string): Promise<number> {
  const passes: PassRecord[] = [];
  const tasks: TaskEvent[] = [];
  const transfers: TransferEvent[] = [];
  const observer: Observer = {
    onTaskEnd: (e) => tasks.push(e),
    onTransfer: (e) => transfers.push(e),
  };
  const trainer = new PipelineTrainer(rt, spec(batch), data, {
    devices: devs,
    microBatches: micro,
    schedule,
    ...(split === undefined || devs.length !== split.length ? {} : { split }),
    onPass: (p) => {
      if (p.step < warm) return;
      if (passes.length === 0) rt.addObserver(observer);
      passes.push(p);
    },
  });
  const reports: StepReport[] = [];
  await trainer.run((r) => reports.push(r));
  rt.removeObserver(observer);
  trainer.dispose();
  const t = timed(reports);
  const p = devs.length;
  // Per device: busy union over the observed window.
  const t0 = Math.min(...tasks.map((e) => e.startUs));
  const t1 = Math.max(...tasks.map((e) => e.endUs));
  const idle: Record<string, number> = {};
  for (const d of new Set(devs)) {
    const busy = union(tasks.filter((e) => e.deviceId === d).map((e) => [e.startUs, e.endUs]));
    idle[d] = 1 - busy / Math.max(t1 - t0, 1);
  }
  // Per stage and pass kind: the device time of each pass's tasks, median over passes.
  const byId = new Map(tasks.map((e) => [e.taskId, e]));
  const passMs = (stage: number, kind: 'F' | 'B'): number =>
    median(
      passes
        .filter((x) => x.stage === stage && x.kind === kind)
        .map((x) => {
          const spans: [number, number][] = [];
          for (let id = x.firstTaskId; id <= x.lastTaskId; id++) {
            const e = byId.get(id);
            if (e !== undefined && e.deviceId === devs[stage]) spans.push([e.startUs, e.endUs]);
          }
          return union(spans) / 1000;
        }),
    );
  const forward = devs.map((_, s) => passMs(s, 'F'));
  const backward = devs.map((_, s) => passMs(s, 'B'));
  const boundary = transfers.filter((x) => x.bytes > 0);
  const transferMs = boundary.length === 0 ? 0 : median(boundary.map((x) => (x.endUs - x.startUs) / 1000));
  const sim =
    p > 1 ? simulateSchedule(schedule, p, micro, { forward, backward, transfer: transferMs }) : null;
  // The update after the passes (tied-gradient sum, norm, AdamW, head copy): the tasks of a step after
  // its last pass, the busiest device's time, median over steps.
  const updateMs = median(
    [...new Set(passes.map((x) => x.step))].map((step) => {
      const after = Math.max(...passes.filter((x) => x.step === step).map((x) => x.lastTaskId));
      const next = passes.filter((x) => x.step === step + 1).map((x) => x.firstTaskId);
      const end = next.length > 0 ? Math.min(...next) : Infinity;
      const perDevice = [...new Set(devs)].map((d) =>
        union(
          tasks
            .filter((e) => e.taskId > after && e.taskId < end && e.deviceId === d)
            .map((e) => [e.startUs, e.endUs]),
        ),
      );
      return Math.max(...perDevice) / 1000;
    }),
  );
  // What separate devices with these stage times would give: the schedule's makespan plus the update.
  const predictedTokPerS = sim === null ? null : (batch * seq * 1000) / (sim.makespan + updateMs);
  console.log(
    JSON.stringify({
      mode: label,
      devices: devs,
      schedule,
      split: trainer.split,
      batch,
      micro,
      ...t,
      measuredIdle: idle,
      theoreticalBubble: p > 1 ? theoreticalBubble(p, micro) : 0,
      stageMs: { forward, backward, transfer: transferMs, update: updateMs },
      simulated:
        sim === null
          ? null
          : { makespanMs: sim.makespan, bubble: sim.bubble, idle: sim.idle, peakInFlight: sim.peakInFlight },
      predictedTokPerS,
      sharedDevice: new Set(devs).size < devs.length,
    }),
  );
  return t.tokPerS;
}

try {
  await runSingle();
  const accum = await runPipeline([devices[0]!], '1f1b', 'accumulate-1-device');
  for (const schedule of String(values['schedules']).split(',') as ScheduleKind[]) {
    const tokPerS = await runPipeline(devices, schedule, 'pipeline');
    console.log(JSON.stringify({ schedule, ratioToAccumulate1Device: tokPerS / accum }));
  }
} finally {
  await rt.close();
}
