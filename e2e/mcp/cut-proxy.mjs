// A TCP proxy between toolsearch and an upstream that drops, once, the
// connection carrying a request that contains MARKER, DELAY ms after it:
// a network that fails under a long call. It logs "cut" when it does and
// "resume" for each request that carries Last-Event-ID, which is how a
// client asks for the rest of a stream.
// Usage: PORT=N node cut-proxy.mjs TARGET_PORT MARKER DELAY_MS
import net from "node:net";

const [targetPort, marker, delay] = process.argv.slice(2);
let armed = true;
net.createServer((client) => {
	const upstream = net.connect(Number(targetPort), "127.0.0.1");
	client.on("data", (chunk) => {
		const text = chunk.toString("latin1");
		if (/^last-event-id:/im.test(text)) console.log("resume");
		if (armed && text.includes(marker)) {
			armed = false;
			setTimeout(() => { console.log("cut"); client.destroy(); upstream.destroy(); }, Number(delay));
		}
		upstream.write(chunk);
	});
	upstream.on("data", (chunk) => client.write(chunk));
	for (const s of [client, upstream]) {
		s.on("error", () => {});
		s.on("close", () => { client.destroy(); upstream.destroy(); });
	}
}).listen(Number(process.env.PORT), "127.0.0.1", () => console.log(`cut-proxy listening on port ${process.env.PORT}`));
