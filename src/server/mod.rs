//! The MCP glue: serves the tool table over stdio with rmcp and converts between
//! `CallToolRequest` / `CallToolResult` and `App::call`. Nothing else lives here: a search
//! change never touches this file, a protocol change never touches the domains.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::Value;

mod stdio;

use crate::app::App;
use crate::contract::{ToolSpec, TOOLS};
use crate::error::ToolResult;

const INSTRUCTIONS: &str =
    "manvault searches a folder of manuals exhaustively and writes notes into a vault. \
Call get_tooling_guide first when unsure; manual_find answers with a trace id and next_actions, \
follow them instead of reading whole files; copy manual text into the vault with bridge_copy_* \
so it never passes through the conversation.";

/// The rmcp handler: the shared application plus the tool list built once.
#[derive(Clone)]
pub struct McpServer {
    app: Arc<App>,
    tools: Arc<Vec<Tool>>,
}

impl McpServer {
    pub fn new(app: Arc<App>) -> McpServer {
        McpServer {
            app,
            tools: Arc::new(TOOLS.iter().map(mcp_tool).collect()),
        }
    }

    /// Serves MCP on stdin/stdout until the client closes the stream; `stdio` answers
    /// malformed lines itself and passes the rest to rmcp.
    pub async fn serve_stdio(self) -> Result<(), Box<dyn std::error::Error>> {
        stdio::serve(self).await
    }
}

fn schema_object(text: &str) -> Arc<JsonObject> {
    match serde_json::from_str(text) {
        Ok(Value::Object(map)) => Arc::new(map),
        _ => unreachable!("build.rs emits every schema as a JSON object"),
    }
}

fn mcp_tool(spec: &ToolSpec) -> Tool {
    let annotations = ToolAnnotations::with_title(spec.title)
        .read_only(spec.read_only)
        .destructive(spec.destructive)
        .idempotent(spec.idempotent)
        .open_world(spec.open_world);
    Tool::new(
        spec.name,
        spec.description,
        schema_object(spec.input_schema),
    )
    .with_title(spec.title)
    .with_raw_output_schema(schema_object(spec.output_schema))
    .with_annotations(annotations)
}

/// Success: the object as structuredContent plus its compact JSON as the one text block.
/// Failure: isError with one text block holding `{code, message, details?}` and no
/// structuredContent, since TypeScript clients validate structuredContent against the
/// outputSchema even on errors (DECISIONS.md).
pub fn to_call_result(result: ToolResult<Value>) -> CallToolResult {
    match result {
        Ok(value) => CallToolResult::structured(value),
        Err(error) => CallToolResult::error(vec![ContentBlock::text(error.to_json().to_string())]),
    }
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                env!("CARGO_PKG_NAME"),
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.as_ref().clone()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.to_string();
        if crate::contract::tool(&name).is_none() {
            return Err(ErrorData::invalid_params(
                format!("unknown tool: {}", crate::error::clip(&name)),
                None,
            ));
        }
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let app = Arc::clone(&self.app);
        // Handlers are synchronous (file I/O, CPU-bound search); keep them off the reactor.
        let result = tokio::task::spawn_blocking(move || app.call(&name, arguments))
            .await
            .map_err(|e| ErrorData::internal_error(format!("tool task failed: {e}"), None))?
            .expect("tool name checked above");
        Ok(to_call_result(result).into())
    }
}
