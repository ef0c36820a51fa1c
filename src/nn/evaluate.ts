/** Evaluation without gradients: classifier accuracy and loss, language-model validation loss. */
import type { Nn } from './context.js';
import type { ImageSet } from './data/images.js';
import { TokenLoader } from './data/tokens.js';
import type { Classifier } from './models/classifiers.js';
import type { Gpt } from './models/gpt.js';
import { crossEntropy } from './ops/loss.js';

export interface ClassifierScore {
  readonly accuracy: number;
  readonly loss: number;
  readonly count: number;
}

/** Accuracy and mean loss over the whole set (or its first `limit` images), in batches. */
export async function evaluateClassifier(
  nn: Nn,
  model: Classifier,
  set: ImageSet,
  batch = 1000,
  limit = set.count,
): Promise<ClassifierScore> {
  const px = set.height * set.width;
  let correct = 0;
  let lossSum = 0;
  let seen = 0;
  for (let first = 0; first < limit; first += batch) {
    const n = Math.min(batch, limit - first);
    const x = nn.input(set.images.subarray(first * px, (first + n) * px), [n, 1, set.height, set.width]);
    const y = nn.input(set.labels.subarray(first, first + n), [n], 'i32');
    const { logits, loss } = nn.noGrad(() => {
      const l = model.logits(x);
      return { logits: l, loss: crossEntropy(nn, l, y) };
    });
    const scores = await logits.values();
    const classes = scores.length / n;
    for (let i = 0; i < n; i++) {
      let best = 0;
      for (let c = 1; c < classes; c++) if (scores[i * classes + c]! > scores[i * classes + best]!) best = c;
      if (best === set.labels[first + i]) correct++;
    }
    lossSum += (await loss.item()) * n;
    seen += n;
    nn.release();
    nn.free(x.data);
    nn.free(y.data);
  }
  return { accuracy: correct / seen, loss: lossSum / seen, count: seen };
}

/** Mean next-token loss over `batches` in-order batches of the validation stream. */
export async function evaluateGpt(
  nn: Nn,
  model: Gpt,
  tokens: ArrayLike<number>,
  batch: number,
  time: number,
  batches: number,
): Promise<number> {
  const loader = new TokenLoader(tokens, { batch, time, vocab: model.config.vocab });
  const n = Math.min(batches, loader.batchesPerEpoch);
  let sum = 0;
  for (let i = 0; i < n; i++) {
    const b = loader.next();
    const ids = nn.input(b.inputs, [batch, time], 'i32');
    const targets = nn.input(b.targets, [batch * time], 'i32');
    const loss = nn.noGrad(() => model.loss(ids, targets));
    sum += await loss.item();
    nn.release();
    nn.free(ids.data);
    nn.free(targets.data);
  }
  return sum / n;
}
