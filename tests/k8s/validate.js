// Validate every manifest under deploy/kubernetes offline: built-in kinds
// against the Kubernetes OpenAPI schemas (kubernetes-models), custom
// resources against the schemas of the CRDs in crds.yaml (ajv), the pod
// templates inside custom resources as core/v1 pod templates, and the
// hardening every pod must have.  Broken copies of the examples must be
// rejected, so a validator that accepts anything fails here.
// Prints PASS/FAIL lines and "N passed, N failed"; exits 1 on a failure.
"use strict";
const fs = require("fs");
const path = require("path");
const YAML = require("yaml");
const Ajv = require("ajv");
const addFormats = require("ajv-formats");

const dir = path.resolve(__dirname, "..", "..", "deploy", "kubernetes");
let passed = 0, failed = 0;

function check(name, fn) {
	try {
		fn();
		passed++;
		console.log("PASS " + name);
	} catch (e) {
		failed++;
		console.log("FAIL " + name + ": " + String(e.message || e));
	}
}

function model(obj) {
	const mod = require("kubernetes-models/" + obj.apiVersion);
	const Kind = mod[obj.kind];
	if (typeof Kind !== "function")
		throw new Error("no model for " + obj.apiVersion + " " + obj.kind);
	return new Kind(obj);
}

const docs = [];
for (const f of fs.readdirSync(dir).filter((f) => f.endsWith(".yaml")).sort()) {
	const all = YAML.parseAllDocuments(fs.readFileSync(path.join(dir, f), "utf8"));
	all.forEach((d, i) => {
		if (d.errors.length > 0)
			throw new Error(f + ": " + d.errors[0].message);
		docs.push({ file: f, i, obj: d.toJS() });
	});
}

// A copy of a structural schema that refuses unknown fields, as kubectl's
// strict field validation does (a cluster would prune them silently).
function strict(schema) {
	const s = JSON.parse(JSON.stringify(schema));
	(function walk(n) {
		if (n === null || typeof n !== "object")
			return;
		if (n.properties !== undefined &&
		    !n["x-kubernetes-preserve-unknown-fields"] &&
		    n.additionalProperties === undefined)
			n.additionalProperties = false;
		for (const k of Object.keys(n))
			if (k !== "metadata")
				walk(n[k]);
	})(s);
	return s;
}

// The CRDs' schemas, by group/version/kind.
const ajv = new Ajv({ allErrors: true, strict: false });
addFormats(ajv);
const crds = {};
for (const { obj } of docs) {
	if (obj.kind !== "CustomResourceDefinition")
		continue;
	for (const v of obj.spec.versions)
		crds[obj.spec.group + "/" + v.name + "/" + obj.spec.names.kind] =
		    ajv.compile(strict(v.schema.openAPIV3Schema));
}

function validate(obj) {
	const key = obj.apiVersion + "/" + obj.kind;
	if (crds[key] !== undefined) {
		if (!crds[key](obj))
			throw new Error(ajv.errorsText(crds[key].errors));
		if (obj.spec && obj.spec.template !== undefined)
			model({ apiVersion: "v1", kind: "PodTemplate",
			    metadata: { name: "t" },
			    template: obj.spec.template }).validate();
		return;
	}
	if (obj.apiVersion.startsWith("sandbox.opensandbox.io/"))
		throw new Error("no CRD for " + key);
	model(obj).validate();
}

// The pod spec of an object that runs pods, or null.
function podSpec(obj) {
	if (obj.kind === "Pod")
		return obj.spec;
	if (obj.spec && obj.spec.template && obj.spec.template.spec)
		return obj.spec.template.spec;
	return null;
}

function hardened(spec) {
	const sc = spec.securityContext || {};
	if (!sc.seccompProfile || sc.seccompProfile.type !== "RuntimeDefault")
		throw new Error("pod seccompProfile is not RuntimeDefault");
	const inits = spec.initContainers || [];
	if (!inits.some((c) => c.name === "execd-installer"))
		throw new Error("no execd-installer init container");
	const vol = (spec.volumes || []).find((v) => v.name === "opensandbox-bin");
	if (!vol || !vol.emptyDir)
		throw new Error("no opensandbox-bin emptyDir");
	for (const c of inits.concat(spec.containers)) {
		const csc = c.securityContext || {};
		if (csc.allowPrivilegeEscalation !== false)
			throw new Error(c.name + ": allowPrivilegeEscalation is not false");
		const drop = (csc.capabilities || {}).drop || [];
		if (!drop.includes("ALL"))
			throw new Error(c.name + ": capabilities not dropped");
		if (!c.resources || !c.resources.requests || !c.resources.limits)
			throw new Error(c.name + ": no resource requests and limits");
		if (!(c.volumeMounts || []).some((m) => m.name === "opensandbox-bin" &&
		    m.mountPath === "/opt/opensandbox"))
			throw new Error(c.name + ": /opt/opensandbox not mounted");
	}
	for (const c of spec.containers) {
		if ((c.command || [])[0] !== "/opt/opensandbox/bootstrap.sh")
			throw new Error(c.name + ": not started by bootstrap.sh");
		const port = (c.ports || []).find((p) => p.containerPort === 44772);
		if (!port)
			throw new Error(c.name + ": no port 44772");
		for (const p of ["readinessProbe", "livenessProbe"]) {
			const g = (c[p] || {}).httpGet;
			if (!g || g.path !== "/ping" ||
			    (g.port !== port.name && g.port !== 44772))
				throw new Error(c.name + ": " + p + " is not /ping on 44772");
		}
	}
}

for (const { file, i, obj } of docs) {
	const name = file + "#" + i + " " + obj.kind + " " + obj.metadata.name;
	check(name + " is valid", () => validate(obj));
	const spec = podSpec(obj);
	if (spec !== null)
		check(name + " is hardened", () => hardened(spec));
}

// Broken copies must be rejected.
function find(kind) {
	const d = docs.find((d) => d.obj.kind === kind && d.obj.spec.template);
	if (!d)
		throw new Error("no " + kind + " with a template");
	return JSON.parse(JSON.stringify(d.obj));
}
const broken = {
	"Deployment with replicas \"two\"": () => {
		const o = find("Deployment"); o.spec.replicas = "two"; return o;
	},
	"Deployment container without a name": () => {
		const o = find("Deployment");
		delete o.spec.template.spec.containers[0].name; return o;
	},
	"Pool with bufferMin \"x\"": () => {
		const o = find("Pool"); o.spec.capacitySpec.bufferMin = "x"; return o;
	},
	"Pool with an unknown spec field": () => {
		const o = find("Pool"); o.spec.size = 3; return o;
	},
	"BatchSandbox with neither template nor poolRef": () => {
		const o = find("BatchSandbox"); delete o.spec.template; return o;
	},
	"BatchSandbox whose pod template has containers: 7": () => {
		const o = find("BatchSandbox");
		o.spec.template.spec.containers = 7; return o;
	},
	"BatchSandbox with a bad expireTime": () => {
		const o = find("BatchSandbox"); o.spec.expireTime = "soon"; return o;
	},
};
for (const [what, make] of Object.entries(broken)) {
	check("rejects " + what, () => {
		let ok = true;
		try {
			validate(make());
		} catch (e) {
			ok = false;
		}
		if (ok)
			throw new Error("accepted");
	});
}
check("an unhardened pod is caught", () => {
	const o = find("Deployment");
	o.spec.template.spec.containers[0].securityContext = {};
	let ok = true;
	try {
		hardened(o.spec.template.spec);
	} catch (e) {
		ok = false;
	}
	if (ok)
		throw new Error("accepted");
});

console.log(passed + " passed, " + failed + " failed");
process.exit(failed === 0 ? 0 : 1);
