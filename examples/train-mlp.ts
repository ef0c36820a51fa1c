/**
 * docs/deep-learning.md's training loop on Fashion-MNIST (Debian `dataset-fashion-mnist`): an MLP
 * 784-256-10 trained with AdamW on the CPU, the loss printed every 10 steps, then the test accuracy.
 *
 *   npm run build && node dist/examples/train-mlp.js [steps]
 */
import { Runtime } from 'tandem';
import { AdamW, Mlp, Nn, batches, evaluateClassifier, loadFashionMnist, type ImageBatch } from 'tandem/nn';

const steps = Number(process.argv[2] ?? 100);
const batchSize = 64;

const data = await loadFashionMnist(); // TANDEM_ERR_BAD_DATA naming the package when it is not installed
const rt = await Runtime.create({ backends: ['cpu'] });
const nn = new Nn(rt, { precision: 'f32', seed: 1 }); // device: 'cuda0' to pin the model to a GPU
const model = new Mlp(nn, { sizes: [784, 256, 10] });
const opt = new AdamW(nn, model.parameters(), { lr: 1e-3 });

// One epoch's shuffled batches after another: images Float32Array [64·784], labels Int32Array [64].
let epoch = 0;
let epochBatches = batches(data.train, { batchSize, seed: 1, epoch, dropLast: true });
function nextBatch(): ImageBatch {
  let next = epochBatches.next();
  if (next.done === true) {
    epochBatches = batches(data.train, { batchSize, seed: 1, epoch: ++epoch, dropLast: true });
    next = epochBatches.next();
  }
  return next.value;
}

for (let step = 0; step < steps; step++) {
  const { images, labels } = nextBatch();
  const x = nn.input(images, [batchSize, 784]);
  const y = nn.input(labels, [batchSize], 'i32');
  const loss = model.loss(x, y);
  await loss.backward(); // the backward tasks are queued; the step's activations are released
  opt.step();
  opt.zeroGrad();
  rt.free(x.data);
  rt.free(y.data);
  if (step % 10 === 0) console.log(step, await loss.item());
}
const score = await evaluateClassifier(nn, model, data.test);
console.log(`test accuracy ${(100 * score.accuracy).toFixed(2)} %`);
await rt.close();
