//! Compiles `schemas/` into the tool contract.
//!
//! The schemas are the single source of truth: this script turns them into
//! - `types.rs`: request/response structs (typify),
//! - `tools.rs`: the tool table (name, title, description, annotations and the *bundled*
//!   input/output schemas served to clients), one trait per tool domain, and `dispatch`.
//!
//! Adding a tool means adding `schemas/tools/<name>.input.json` + `.output.json` (the input
//! schema carries the tool's metadata under `x-tool`) and implementing the generated trait
//! method; nothing here changes.
//!
//! typify 0.8 reads schemas in the draft-07 model and panics on external `$ref`s, so shared
//! definitions are resolved here: clients get each schema bundled (the shared definitions it
//! reaches copied into its `$defs`, nothing else), typify gets one flat `definitions` map.
//! Keywords that would make typify emit validating newtypes (`minLength`, `pattern`, bounds)
//! are dropped from typify's copy only: the server validates every input against the full
//! bundled schema at runtime.
//!
//! Every client loads the tool list into its model's context on every session, so the
//! served copy carries only what a caller needs: no `$schema` / `$id` (a served schema is
//! 2020-12 and stands alone), no `title` (typify's type names; the tool has its own title),
//! no root description (the input's is the tool description, served beside it), and of the
//! examples only the input's first. The files in `schemas/` keep all of it for the people
//! who generate types from them. A shared vocabulary (a `common/` file that is a plain
//! `enum`) is served inline where it is used: it stays one definition, and so one Rust
//! enum, for typify.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

const SCHEMA_DIR: &str = "schemas";

fn main() {
    println!("cargo:rerun-if-changed={SCHEMA_DIR}");
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let common = load_common(&Path::new(SCHEMA_DIR).join("common"));
    let tools = load_tools(&Path::new(SCHEMA_DIR).join("tools"));

    let types = generate_types(&common, &tools);
    fs::write(out_dir.join("types.rs"), types).expect("write types.rs");
    let table = generate_tool_table(&common, &tools);
    fs::write(out_dir.join("tools.rs"), table).expect("write tools.rs");
}

/// A shared definition file of `schemas/common/`, keyed by file name.
struct Common {
    title: String,
    schema: Value,
}

/// One tool: its metadata from `x-tool` and its two schemas.
struct ToolDef {
    name: String,
    title: String,
    domain: String,
    order: i64,
    annotations: Map<String, Value>,
    input: Value,
    output: Value,
}

fn fail(message: String) -> ! {
    build_print::error!("{message}");
    std::process::exit(1)
}

fn read_json(path: &Path) -> Value {
    println!("cargo:rerun-if-changed={}", path.display());
    let text =
        fs::read_to_string(path).unwrap_or_else(|e| fail(format!("{}: {e}", path.display())));
    serde_json::from_str(&text).unwrap_or_else(|e| fail(format!("{}: {e}", path.display())))
}

fn title_of(schema: &Value, path: &Path) -> String {
    schema["title"]
        .as_str()
        .unwrap_or_else(|| {
            fail(format!(
                "{}: a root schema needs a title (the type name)",
                path.display()
            ))
        })
        .to_string()
}

fn sorted_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap_or_else(|e| fail(format!("{}: {e}", dir.display())))
        .map(|entry| entry.expect("readable schema dir").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    files.sort();
    files
}

fn load_common(dir: &Path) -> BTreeMap<String, Common> {
    sorted_files(dir)
        .into_iter()
        .map(|path| {
            let schema = read_json(&path);
            let title = title_of(&schema, &path);
            let file = path.file_name().unwrap().to_string_lossy().into_owned();
            (file, Common { title, schema })
        })
        .collect()
}

fn load_tools(dir: &Path) -> Vec<ToolDef> {
    let mut tools = Vec::new();
    for path in sorted_files(dir) {
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        let Some(name) = file.strip_suffix(".input.json") else {
            continue;
        };
        let input = read_json(&path);
        let output_path = dir.join(format!("{name}.output.json"));
        if !output_path.exists() {
            fail(format!(
                "{}: missing its output schema {}",
                path.display(),
                output_path.display()
            ));
        }
        let output = read_json(&output_path);
        title_of(&input, &path);
        title_of(&output, &output_path);
        let meta = input["x-tool"]
            .as_object()
            .unwrap_or_else(|| fail(format!("{}: missing x-tool", path.display())));
        let field = |key: &str| {
            meta.get(key)
                .and_then(Value::as_str)
                .unwrap_or_else(|| {
                    fail(format!("{}: x-tool.{key} must be a string", path.display()))
                })
                .to_string()
        };
        if field("name") != name {
            fail(format!(
                "{}: x-tool.name must equal the file name",
                path.display()
            ));
        }
        if !name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        {
            fail(format!("{name}: tool names use [a-z0-9_] only"));
        }
        if input["description"].as_str().is_none() {
            fail(format!(
                "{}: the input schema's description is the tool description",
                path.display()
            ));
        }
        tools.push(ToolDef {
            name: name.to_string(),
            title: field("title"),
            domain: field("domain"),
            order: meta.get("order").and_then(Value::as_i64).unwrap_or(1000),
            annotations: meta
                .get("annotations")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default(),
            input,
            output,
        });
    }
    tools.sort_by(|a, b| (a.order, &a.name).cmp(&(b.order, &b.name)));
    tools
}

/// Where a `$ref` points: a definition local to the same document, or a whole common file.
enum RefTarget {
    Local(String),
    Common(String),
}

fn parse_ref(reference: &str, common: &BTreeMap<String, Common>) -> RefTarget {
    if let Some(local) = reference
        .strip_prefix("#/$defs/")
        .or_else(|| reference.strip_prefix("#/definitions/"))
    {
        return RefTarget::Local(local.to_string());
    }
    let (file_part, fragment) = reference.split_once('#').unwrap_or((reference, ""));
    if !fragment.is_empty() {
        fail(format!(
            "$ref {reference}: only whole common files can be referenced"
        ));
    }
    let file = file_part.rsplit('/').next().unwrap_or(file_part);
    if !common.contains_key(file) {
        fail(format!("$ref {reference}: no schemas/common/{file}"));
    }
    RefTarget::Common(file.to_string())
}

/// Rewrites every `$ref` in `value` with `rename`, in place.
fn rewrite_refs(value: &mut Value, rename: &mut dyn FnMut(&str) -> String) {
    match value {
        Value::Object(map) => {
            for (key, child) in map.iter_mut() {
                if key == "$ref" {
                    if let Value::String(reference) = child {
                        *reference = rename(reference);
                    }
                } else {
                    rewrite_refs(child, rename);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|item| rewrite_refs(item, rename)),
        _ => {}
    }
}

/// A copy of `schema` that stands alone: every common definition it reaches, directly or
/// through other common files, is copied under `$defs` by its title. This is what clients
/// see as inputSchema / outputSchema and what the server validates with.
fn bundle(schema: &Value, common: &BTreeMap<String, Common>) -> Value {
    let mut bundled = schema.clone();
    if let Some(map) = bundled.as_object_mut() {
        map.remove("x-tool");
    }
    inline_enums(&mut bundled, common);
    let mut pending = Vec::new();
    let to_local = |reference: &str, pending: &mut Vec<String>| match parse_ref(reference, common) {
        RefTarget::Local(name) => format!("#/$defs/{name}"),
        RefTarget::Common(file) => {
            pending.push(file.clone());
            format!("#/$defs/{}", common[&file].title)
        }
    };
    rewrite_refs(&mut bundled, &mut |r| to_local(r, &mut pending));
    let mut included = BTreeMap::new();
    while let Some(file) = pending.pop() {
        let entry = &common[&file];
        if included.contains_key(&entry.title) {
            continue;
        }
        let mut definition = entry.schema.clone();
        let map = definition
            .as_object_mut()
            .expect("common schemas are objects");
        for key in ["$schema", "$id", "examples"] {
            map.remove(key);
        }
        inline_enums(&mut definition, common);
        rewrite_refs(&mut definition, &mut |r| to_local(r, &mut pending));
        included.insert(entry.title.clone(), definition);
    }
    if !included.is_empty() {
        let defs = bundled
            .as_object_mut()
            .expect("tool schemas are objects")
            .entry("$defs")
            .or_insert_with(|| Value::Object(Map::new()));
        for (title, definition) in included {
            defs.as_object_mut()
                .expect("$defs is an object")
                .insert(title, definition);
        }
    }
    prune_unreferenced_defs(&mut bundled);
    bundled
}

/// Replaces every `$ref` to a common file that is a plain enum (a vocabulary such as
/// `Intent`, shared so that Rust has one type for it) by the enum itself, keeping the
/// referring site's own keywords (its description wins). A served schema is loaded into
/// every client's context: an inline `enum` costs less than a `$ref` plus a `$defs` entry,
/// and typify, which reads the unbundled files, still sees one definition.
fn inline_enums(value: &mut Value, common: &BTreeMap<String, Common>) {
    match value {
        Value::Object(map) => {
            let target = match map.get("$ref") {
                Some(Value::String(reference)) => match parse_ref(reference, common) {
                    RefTarget::Common(file) if is_plain_enum(&common[&file].schema) => Some(file),
                    _ => None,
                },
                _ => None,
            };
            if let Some(file) = target {
                map.remove("$ref");
                let definition = common[&file]
                    .schema
                    .as_object()
                    .expect("checked plain enum");
                for (key, keyword) in definition {
                    if !matches!(key.as_str(), "$schema" | "$id" | "title" | "examples") {
                        map.entry(key.clone()).or_insert_with(|| keyword.clone());
                    }
                }
            }
            map.values_mut()
                .for_each(|child| inline_enums(child, common));
        }
        Value::Array(items) => items.iter_mut().for_each(|item| inline_enums(item, common)),
        _ => {}
    }
}

/// A schema that is a list of words and nothing else to resolve.
fn is_plain_enum(schema: &Value) -> bool {
    schema.get("enum").is_some() && !schema.to_string().contains("\"$ref\"")
}

/// Drops the `$defs` entries nothing reaches from the schema's own keywords (directly or
/// through other entries), so a tool carries only the definitions it uses.
fn prune_unreferenced_defs(schema: &mut Value) {
    let Some(Value::Object(mut defs)) = schema.as_object_mut().and_then(|map| map.remove("$defs"))
    else {
        return;
    };
    let mut reached = std::collections::BTreeSet::new();
    let mut pending = local_refs(schema);
    while let Some(name) = pending.pop() {
        if let Some(definition) = defs.get(&name) {
            if reached.insert(name) {
                pending.extend(local_refs(definition));
            }
        }
    }
    defs.retain(|name, _| reached.contains(name));
    if !defs.is_empty() {
        schema
            .as_object_mut()
            .expect("tool schemas are objects")
            .insert("$defs".into(), Value::Object(defs));
    }
}

/// The `$defs` names `value` refers to.
fn local_refs(value: &Value) -> Vec<String> {
    let mut names = Vec::new();
    let mut collect = |reference: &str| {
        if let Some(name) = reference.strip_prefix("#/$defs/") {
            names.push(name.to_string());
        }
        reference.to_string()
    };
    rewrite_refs(&mut value.clone(), &mut collect);
    names
}

/// The copy of a bundled schema a client is served (see the module doc): annotations only
/// people and typify read are dropped; what validates and what a model reads stays.
fn served(mut schema: Value, is_input: bool) -> Value {
    let map = schema.as_object_mut().expect("tool schemas are objects");
    for key in ["$schema", "$id", "description"] {
        map.remove(key);
    }
    let first_example = map
        .get("examples")
        .and_then(Value::as_array)
        .and_then(|examples| examples.first().cloned());
    strip_annotations(&mut schema);
    if let (true, Some(example)) = (is_input, first_example) {
        schema
            .as_object_mut()
            .expect("tool schemas are objects")
            .insert("examples".into(), Value::Array(vec![example]));
    }
    schema
}

/// Removes `title` and `examples` from `schema` and every schema inside it. Only schema
/// positions are visited, so a property *named* `title` stays.
fn strip_annotations(schema: &mut Value) {
    let Some(map) = schema.as_object_mut() else {
        return;
    };
    map.remove("title");
    map.remove("examples");
    for (keyword, child) in map.iter_mut() {
        match keyword.as_str() {
            "properties" | "patternProperties" | "$defs" | "definitions" => {
                if let Some(children) = child.as_object_mut() {
                    children.values_mut().for_each(strip_annotations);
                }
            }
            "anyOf" | "oneOf" | "allOf" | "prefixItems" => {
                if let Some(children) = child.as_array_mut() {
                    children.iter_mut().for_each(strip_annotations);
                }
            }
            "items"
            | "additionalProperties"
            | "not"
            | "contains"
            | "propertyNames"
            | "if"
            | "then"
            | "else" => strip_annotations(child),
            _ => {}
        }
    }
}

/// Drops the keywords that make typify generate validating newtypes; see the module doc.
fn relax_for_typify(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for key in [
                "minLength",
                "maxLength",
                "pattern",
                "format",
                "maximum",
                "examples",
                "x-tool",
                "$id",
                "$schema",
            ] {
                map.remove(key);
            }
            if let Some(minimum) = map.remove("minimum") {
                let non_negative = minimum.as_f64().is_some_and(|m| m >= 0.0);
                let is_integer = match map.get("type") {
                    Some(Value::String(t)) => t == "integer",
                    Some(Value::Array(ts)) => ts.iter().any(|t| t == "integer"),
                    _ => false,
                };
                if non_negative && is_integer {
                    map.insert("minimum".into(), Value::from(0));
                }
            }
            map.values_mut().for_each(relax_for_typify);
        }
        Value::Array(items) => items.iter_mut().for_each(relax_for_typify),
        _ => {}
    }
}

/// All schemas as one flat `definitions` map for typify: common files and tool schemas by
/// title, tool-local `$defs` hoisted by their own (globally unique) names.
fn typify_definitions(
    common: &BTreeMap<String, Common>,
    tools: &[ToolDef],
) -> BTreeMap<String, Value> {
    let mut definitions: BTreeMap<String, Value> = BTreeMap::new();
    let mut add = |name: String, mut schema: Value, origin: &str| {
        rewrite_refs(&mut schema, &mut |r| match parse_ref(r, common) {
            RefTarget::Local(name) => format!("#/definitions/{name}"),
            RefTarget::Common(file) => format!("#/definitions/{}", common[&file].title),
        });
        let local = schema.as_object_mut().and_then(|map| map.remove("$defs"));
        relax_for_typify(&mut schema);
        if definitions.insert(name.clone(), schema).is_some() {
            fail(format!("{origin}: the type name {name} is defined twice"));
        }
        local
    };
    let mut hoisted = Vec::new();
    for entry in common.values() {
        if let Some(local) = add(entry.title.clone(), entry.schema.clone(), &entry.title) {
            hoisted.push((entry.title.clone(), local));
        }
    }
    for tool in tools {
        for schema in [&tool.input, &tool.output] {
            let title = schema["title"]
                .as_str()
                .expect("checked at load")
                .to_string();
            if let Some(local) = add(title, schema.clone(), &tool.name) {
                hoisted.push((tool.name.clone(), local));
            }
        }
    }
    for (origin, local) in hoisted {
        for (name, schema) in local.as_object().cloned().unwrap_or_default() {
            add(name, schema, &origin);
        }
    }
    definitions
}

fn generate_types(common: &BTreeMap<String, Common>, tools: &[ToolDef]) -> String {
    let definitions = typify_definitions(common, tools);
    let mut settings = typify::TypeSpaceSettings::default();
    settings.with_struct_builder(false);
    settings.with_derive("PartialEq".to_string());
    let mut space = typify::TypeSpace::new(&settings);
    let converted = definitions.into_iter().map(|(name, schema)| {
        let schema: schemars08::schema::Schema = serde_json::from_value(schema)
            .unwrap_or_else(|e| fail(format!("{name}: not a schema typify reads: {e}")));
        (name, schema)
    });
    space
        .add_ref_types(converted)
        .unwrap_or_else(|e| fail(format!("typify: {e}")));
    let file: syn::File =
        syn::parse2(space.to_stream()).unwrap_or_else(|e| fail(format!("typify output: {e}")));
    let mut code = prettyplease::unparse(&file);
    code.push_str(&wire_names(&code));
    code
}

/// An `as_str` for every generated enum of words, read off the `Display` impl typify wrote
/// for it: domain code keys statistics and log fields by these words, and with this no
/// module spells a schema's vocabulary a second time.
fn wire_names(code: &str) -> String {
    let mut impls = String::new();
    let mut lines = code.lines();
    while let Some(line) = lines.next() {
        let Some(name) = line
            .strip_prefix("impl ::std::fmt::Display for ")
            .and_then(|rest| rest.strip_suffix(" {"))
        else {
            continue;
        };
        let mut arms = Vec::new();
        for arm in lines.by_ref().skip(2) {
            let Some((variant, word)) = arm.trim().split_once(" => f.write_str(") else {
                break;
            };
            let Some(word) = word.strip_suffix("),") else {
                break;
            };
            arms.push(format!("{variant} => {word},"));
        }
        if !arms.is_empty() {
            impls.push_str(&format!(
                "impl {name} {{\n    /// The word the schema uses for this value.\n    pub const fn as_str(self) -> &'static str {{\n        match self {{\n            {}\n        }}\n    }}\n}}\n",
                arms.join("\n            ")
            ));
        }
    }
    impls
}

fn trait_name(domain: &str) -> String {
    let mut chars = domain.chars();
    let head = chars.next().map(|c| c.to_ascii_uppercase()).into_iter();
    format!("{}Tools", head.chain(chars).collect::<String>())
}

fn rust_string(text: &str) -> String {
    format!("{text:?}")
}

fn annotation(tool: &ToolDef, key: &str, default: bool) -> bool {
    tool.annotations
        .get(key)
        .and_then(Value::as_bool)
        .unwrap_or(default)
}

fn generate_tool_table(common: &BTreeMap<String, Common>, tools: &[ToolDef]) -> String {
    let mut code = String::new();
    code.push_str(
        "/// Every tool, in the stable order of `tools/list` (x-tool.order, then name).\n",
    );
    code.push_str("pub static TOOLS: &[ToolSpec] = &[\n");
    for tool in tools {
        let input = serde_json::to_string(&served(bundle(&tool.input, common), true)).unwrap();
        let output = serde_json::to_string(&served(bundle(&tool.output, common), false)).unwrap();
        code.push_str(&format!(
            "ToolSpec {{ name: {}, title: {}, description: {}, domain: {}, input_schema: {}, output_schema: {}, \
             read_only: {}, destructive: {}, idempotent: {}, open_world: {} }},\n",
            rust_string(&tool.name),
            rust_string(&tool.title),
            rust_string(tool.input["description"].as_str().unwrap()),
            rust_string(&tool.domain),
            rust_string(&input),
            rust_string(&output),
            annotation(tool, "readOnlyHint", false),
            annotation(tool, "destructiveHint", true),
            annotation(tool, "idempotentHint", false),
            annotation(tool, "openWorldHint", false),
        ));
    }
    code.push_str("];\n\n");

    let mut domains: BTreeMap<&str, Vec<&ToolDef>> = BTreeMap::new();
    for tool in tools {
        domains.entry(tool.domain.as_str()).or_default().push(tool);
    }
    for (domain, members) in &domains {
        code.push_str(&format!(
            "/// The `{domain}` tools; generated from schemas/tools/.\npub trait {} {{\n",
            trait_name(domain)
        ));
        for tool in members {
            code.push_str(&format!(
                "    #[doc = {}]\n    fn {}(&self, input: types::{}, call: &crate::call::CallContext) -> crate::error::ToolResult<types::{}>;\n",
                rust_string(&tool.title),
                tool.name,
                tool.input["title"].as_str().unwrap(),
                tool.output["title"].as_str().unwrap(),
            ));
        }
        code.push_str("}\n\n");
    }

    let bounds: Vec<String> = domains.keys().map(|d| trait_name(d)).collect();
    code.push_str("/// Routes a validated call to its handler; `None` for an unknown tool name.\n");
    code.push_str(&format!(
        "pub fn dispatch<H: {}>(handler: &H, tool: &str, arguments: serde_json::Value, call: &crate::call::CallContext) -> Option<crate::error::ToolResult<serde_json::Value>> {{\n    Some(match tool {{\n",
        bounds.join(" + ")
    ));
    for tool in tools {
        code.push_str(&format!(
            "        {:?} => call_typed(arguments, |input| handler.{}(input, call)),\n",
            tool.name, tool.name
        ));
    }
    code.push_str("        _ => return None,\n    })\n}\n");
    let file: syn::File =
        syn::parse_str(&code).unwrap_or_else(|e| fail(format!("generated tool table: {e}")));
    prettyplease::unparse(&file)
}
