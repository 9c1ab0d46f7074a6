// The node-llama-cpp side of `make bench BENCHFLAGS='-only peers'`
// (scripts/bench/peers.go): the same workload, on the same model and
// threads, through node-llama-cpp's own API. peers.go copies it into the
// directory npm installed node-llama-cpp in and runs `node peers.mjs
// WORKLOAD.json`, which prints one JSON object with its measurements.
import fs from "node:fs";
import {performance} from "node:perf_hooks";
import {getLlama} from "node-llama-cpp";

const w = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const llama = await getLlama({gpu: false, build: "never", logLevel: "error", maxThreads: w.threads});
const model = await llama.loadModel({modelPath: w.model, gpuLayers: 0});
const context = await model.createContext({contextSize: w.ctx, batchSize: w.batch, threads: w.threads, sequences: 1, flashAttention: false});
const seq = context.getSequence();
const sampling = {temperature: 0.8, topK: 40, topP: 0.95, minP: 0.05};
const tokenize = (text) => model.tokenize(text, true);

// Tokens/s from the median time between consecutive tokens, as the Go side.
function stampRate(stamps) {
	const d = [];
	for (let i = 1; i < stamps.length; i++) d.push(stamps[i] - stamps[i - 1]);
	if (d.length === 0) return 0;
	d.sort((a, b) => a - b);
	return 1000 / d[Math.floor(d.length / 2)];
}

// generate evaluates tokens after what the sequence holds and draws up to
// n tokens, stopping at end of generation as tact does.
async function generate(tokens, n, seed) {
	const stamps = [];
	for await (const t of seq.evaluate(tokens, {...sampling, seed})) {
		stamps.push(performance.now());
		if (stamps.length >= n || model.isEogToken(t)) break;
	}
	return stamps;
}

// Throughput: alternating runs as the Go side's, the best counts.
const prompt = tokenize(w.prompt);
let promptRate = 0, genRate = 0, genTokens = 0;
for (let i = 0; i <= w.repeat; i++) {
	await seq.clearHistory();
	const t0 = performance.now();
	await seq.evaluateWithoutGeneratingNewTokens(prompt);
	const pr = prompt.length / ((performance.now() - t0) / 1000);
	await seq.clearHistory();
	const stamps = await generate(prompt, w.gen, 42);
	if (i === 0) continue; // warm-up
	promptRate = Math.max(promptRate, pr);
	genRate = Math.max(genRate, stampRate(stamps));
	genTokens = stamps.length;
}

// ReAct: each step's prompt holds the last one whole; with reuse the
// sequence keeps the common prefix (node-llama-cpp's adaptStateToTokens),
// without it the history is cleared before every call.
async function react(reuse) {
	await seq.clearHistory();
	let evaluated = 0, reused = 0, generated = 0;
	const t0 = performance.now();
	for (let i = 0; i < w.steps.length; i++) {
		const tokens = tokenize(w.steps[i]);
		if (reuse) {
			await seq.adaptStateToTokens(tokens, false);
		} else {
			await seq.clearHistory();
		}
		// At least the last token is evaluated: its logits draw the reply.
		const keep = Math.min(seq.nextTokenIndex, tokens.length - 1);
		if (keep < seq.nextTokenIndex) await seq.eraseContextTokenRanges([{start: keep, end: seq.nextTokenIndex}]);
		reused += keep;
		evaluated += tokens.length - keep;
		generated += (await generate(tokens.slice(keep), w.stepGen, i)).length;
	}
	return {wall_s: (performance.now() - t0) / 1000, evaluated, reused, generated};
}
let withReuse = null, cold = null;
for (let i = 0; i < w.reactRepeat; i++) {
	const a = await react(true);
	if (!withReuse || a.wall_s < withReuse.wall_s) withReuse = a;
	const b = await react(false);
	if (!cold || b.wall_s < cold.wall_s) cold = b;
}

const pkg = JSON.parse(fs.readFileSync(new URL("node_modules/node-llama-cpp/package.json", import.meta.url), "utf8"));
console.log(JSON.stringify({
	version: pkg.version, prompt_tokens: prompt.length,
	prompt_rate: promptRate, gen_rate: genRate, gen_tokens: genTokens, react_reuse: withReuse, react_cold: cold,
}));
await context.dispose();
await model.dispose();
await llama.dispose();
