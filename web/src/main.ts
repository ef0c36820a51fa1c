/** The dashboard: a hash router over two views, a key box and a health pill. Talks to the API only. */
import { api, getKey, setKey } from './api.js';
import { jobView } from './job-page.js';
import { modelView, modelsNav } from './model-page.js';
import { overviewView } from './overview.js';
import { h } from './dom.js';

const app = document.getElementById('app')!;
const health = document.getElementById('health')!;
const keyForm = document.getElementById('key-form') as HTMLFormElement;
const keyInput = document.getElementById('key-input') as HTMLInputElement;
let stopView: (() => void) | null = null;

function route(): void {
  stopView?.();
  if (!getKey()) {
    app.replaceChildren(
      h(
        'section',
        { class: 'hello' },
        h('h2', {}, 'Welcome'),
        h(
          'p',
          {},
          'Paste an API key above. The first admin key was printed by `npm start` and is in .tandem/data/admin-key.txt.',
        ),
      ),
    );
    stopView = null;
    return;
  }
  const m = /^#\/jobs\/(job_[0-9a-f]+)$/.exec(location.hash);
  const model = /^#\/models\/([A-Za-z0-9._-]+)$/.exec(location.hash);
  stopView = m ? jobView(app, m[1]!) : model ? modelView(app, model[1]!) : overviewView(app);
}

keyForm.addEventListener('submit', (ev) => {
  ev.preventDefault();
  setKey(keyInput.value);
  keyInput.value = '';
  route();
});
window.addEventListener('hashchange', route);

async function pollHealth(): Promise<void> {
  try {
    const s = await api<{ status: string; queued: number; running: number; runtime: string }>(
      'GET',
      '/healthz',
    );
    health.textContent = `${s.status} · runtime ${s.runtime}`;
    health.className = 'pill ok';
  } catch {
    health.textContent = 'unreachable';
    health.className = 'pill bad';
  }
  setTimeout(() => void pollHealth(), 2000);
}

void pollHealth();
modelsNav(document.getElementById('models-nav')!);
route();
