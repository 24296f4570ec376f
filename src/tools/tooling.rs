//! `ToolingTools` on `App`: the guide, with the limits of this server's configuration.

use crate::app::App;
use crate::call::CallContext;
use crate::contract::types::*;
use crate::contract::{ToolingTools, TOOLS};
use crate::error::ToolResult;
use crate::tooling::{goal_of, plan, when};

impl ToolingTools for App {
    fn get_tooling_guide(
        &self,
        input: GetToolingGuideInput,
        _call: &CallContext,
    ) -> ToolResult<GetToolingGuideOutput> {
        let goal = input
            .intent
            .unwrap_or_else(|| goal_of(input.prompt.as_deref().unwrap_or("")));
        let served = |tool: &str| TOOLS.iter().any(|spec| spec.name == tool);
        let (first_tool, workflows) = plan(goal, &served);
        let config = &self.config;
        Ok(GetToolingGuideOutput {
            goal,
            first_tool: first_tool.to_string(),
            workflows: workflows
                .into_iter()
                .map(|workflow| GuideWorkflow {
                    name: workflow.goal,
                    steps: workflow.steps.iter().map(|s| s.to_string()).collect(),
                    note: workflow.note.to_string(),
                })
                .collect(),
            tools: TOOLS
                .iter()
                .map(|spec| GuideTool {
                    name: spec.name.to_string(),
                    when: when(spec.name).unwrap_or(spec.title).to_string(),
                })
                .collect(),
            limits: GetToolingGuideOutputLimits {
                hard_max_chars: u64::from(config.hard_max_chars),
                hard_max_sections: u64::from(config.hard_max_sections),
                file_scope_allowed: config.allow_file_scope,
                scan_chunk_lines: vec![
                    i64::from(config.vault_scan_default_chunk_lines),
                    i64::from(config.vault_scan_max_chunk_lines),
                ],
                trace_ttl_sec: config.trace_ttl_sec,
            },
        })
    }
}
