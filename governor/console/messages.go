package console

// catalogueParts are the message tables of the console, one per group of
// views; a view file group keeps its labels in its own map and lists it
// here. A key must be in one part only (TestCatalogueComplete).
var catalogueParts = []map[string]msg{shellMessages, reportMessages, requeueMessages, reasonMessages}

// catalogue holds every label of the console in English and Simplified
// Chinese. Formats (%d, %s, %.0f) must agree between the two languages
// (TestCatalogueComplete checks both are present and use the same verbs).
var catalogue = merge(catalogueParts...)

// merge joins message tables.
func merge(parts ...map[string]msg) map[string]msg {
	out := map[string]msg{}
	for _, p := range parts {
		for k, m := range p {
			out[k] = m
		}
	}
	return out
}

// shellMessages are the labels of the shell, sign-in, overview, queue,
// tenant and job views.
var shellMessages = map[string]msg{
	// Shell.
	"nav.label":       {"Views", "视图"},
	"nav.skip":        {"Skip to content", "跳到正文"},
	"nav.overview":    {"Overview", "概览"},
	"nav.queue":       {"Queue", "队列"},
	"nav.tenants":     {"Tenants", "租户"},
	"id.signedin":     {"Signed in as", "当前登录"},
	"id.nobody":       {"no sign-in (ACLs off)", "无需登录（ACL 已关闭）"},
	"id.anonymous":    {"anonymous", "匿名"},
	"signout":         {"Sign out", "退出登录"},
	"banner.aclsoff":  {"ACLs are disabled: everyone sees everything.", "ACL 已关闭：所有人都能看到全部内容。"},
	"signin.title":    {"Sign in", "登录"},
	"signin.token":    {"Nomad ACL token (secret ID)", "Nomad ACL 令牌（Secret ID）"},
	"signin.hint":     {"The console shows and changes exactly what this token may read and write in Nomad. The token stays on the governor; your browser only holds a session cookie.", "控制台只显示和修改该令牌在 Nomad 中有权读写的内容。令牌只保存在调度治理服务（governor）上，浏览器只持有会话 Cookie。"},
	"signin.submit":   {"Sign in", "登录"},
	"signin.empty":    {"Enter a token.", "请输入令牌。"},
	"signin.refused":  {"Nomad refused this token", "Nomad 拒绝了该令牌"},
	"signin.control":  {"This is not a token: it contains control characters. Paste the secret ID only.", "这不是令牌：其中含有控制字符。请只粘贴 Secret ID。"},
	"signin.expired":  {"Your session ended or your token is no longer valid; sign in again.", "会话已结束或令牌已失效，请重新登录。"},
	"err.title":       {"Something went wrong", "出错了"},
	"err.back":        {"Back to the overview", "返回概览"},
	"err.notfound":    {"No such page.", "页面不存在。"},
	"err.forbidden":   {"Permission denied: your token may not read this namespace.", "权限不足：您的令牌无权读取该命名空间。"},
	"err.csrf":        {"Refused: the form was not sent from this console (missing or wrong CSRF token, or another origin). Reload the page and try again.", "已拒绝：表单并非从本控制台提交（CSRF 令牌缺失或错误，或来源不同）。请刷新页面后重试。"},
	"err.internal":    {"Internal error; the governor's log has the details.", "内部错误，详情见 governor 日志。"},
	"err.unavailable": {"Nomad could not be asked about your token; try again.", "暂时无法向 Nomad 校验您的令牌，请稍后重试。"},

	// Common columns and filters.
	"col.pool":      {"Pool", "节点池"},
	"col.model":     {"Model", "型号"},
	"col.capacity":  {"Capacity", "容量"},
	"col.allocated": {"Allocated", "已分配"},
	"col.idle":      {"Idle", "空闲"},
	"col.down":      {"Down", "不可用"},
	"col.waiting":   {"Reserved-waiting", "排队需求"},
	"col.split":     {"Split", "构成"},
	"col.tenant":    {"Tenant", "租户"},
	"col.share":     {"Dominant share", "主导资源份额"},
	"col.usage":     {"Used", "已用"},
	"col.quota":     {"Quota", "配额"},
	"col.limit":     {"Limit", "上限"},
	"col.lend":      {"Lend cap", "可借出上限"},
	"col.borrowed":  {"Borrowed", "借入"},
	"col.lent":      {"Lent", "借出"},
	"col.queued":    {"Queued", "排队中"},
	"col.resource":  {"Resource", "资源"},
	"col.state":     {"State", "状态"},
	"col.time":      {"Time", "时间"},
	"filter.all":    {"All", "全部"},
	"filter.apply":  {"Filter", "筛选"},
	"pager.label":   {"Pages", "分页"},
	"pager.prev":    {"Previous page", "上一页"},
	"pager.next":    {"Next page", "下一页"},
	"pager.of":      {"Page %d of %d", "第 %d 页，共 %d 页"},

	// Job states (engine.State).
	"state.queued":   {"queued", "排队中"},
	"state.admitted": {"admitted", "已准入"},
	"state.direct":   {"direct (not through the governor)", "直接提交（未经 governor）"},
	"state.stopped":  {"stopped by its user", "已被用户停止"},

	// Overview.
	"overview.title":         {"Overview", "概览"},
	"overview.queue":         {"Queue", "队列"},
	"overview.queued.yours":  {"queued jobs you can see", "您可见的排队作业"},
	"overview.queued.total":  {"queued jobs in all", "排队作业总数"},
	"overview.tenants.count": {"tenants you can see", "您可见的租户"},
	"overview.toqueue":       {"Open the queue", "查看队列"},
	"overview.pools":         {"Pools now (devices)", "节点池当前状态（设备数）"},
	"overview.when":          {"When", "时间"},
	"overview.now":           {"now", "当前"},
	"overview.hist":          {"last %d min (average)", "最近 %d 分钟（平均）"},
	"overview.legend":        {"Reserved-waiting: now, what the starving queue heads' reservations hold for them; over the last %d minutes, the average demand of queued jobs waiting for capacity (ledger).", "排队需求：当前行是饥饿队首作业的预留所占设备；最近 %d 分钟行是等待容量的排队作业的平均需求（账本）。"},
	"overview.nolive":        {"Live pool figures are unavailable", "当前节点池数据不可用"},
	"overview.nohistory":     {"No ledger: history unavailable (governor config: data_dir, or ledger { path = \"...\" }).", "未配置账本（ledger）：历史数据不可用（governor 配置：data_dir，或 ledger { path = \"...\" }）。"},
	"overview.histfail":      {"History unavailable", "历史数据不可用"},
	"overview.nopools":       {"No devices in any pool.", "任何节点池中都没有设备。"},
	"overview.holds":         {"Lending held for starved queue heads", "为饥饿队首作业保留的出借额度"},
	"col.heldfor":            {"Held for", "保留给"},
	"col.holdstart":          {"May borrow from", "预计可借用时间"},
	"overview.hiddenjob":     {"a job you may not read", "您无权读取的作业"},
	"overview.unknown":       {"unknown", "未知"},
	"overview.holdslegend":   {"While a cohort's lending is held, no other job of the cohort may borrow unless it ends before that time; jobs within their tenant's nominal quota still start.", "共享组的出借额度被保留期间，该组其他作业不得借用（在该时间之前结束的作业除外）；在租户名义配额之内的作业仍可启动。"},
	"overview.bar":           {"%.0f%% allocated, %.0f%% idle, %.0f%% down", "已分配 %.0f%%，空闲 %.0f%%，不可用 %.0f%%"},
	"overview.top":           {"Top tenants by dominant share", "按主导资源份额排名的租户"},
	"overview.notenants":     {"No governed tenant you may read.", "没有您可读取的受治理租户。"},

	// Queue.
	"queue.title":    {"Queue", "队列"},
	"queue.caption":  {"Queued jobs in queue order", "按队列顺序排列的排队作业"},
	"queue.summary":  {"%d match of %d you can see (%d queued in all)", "符合条件 %d 个（您可见 %d 个，全部排队 %d 个）"},
	"queue.position": {"Position", "位置"},
	"queue.tpos":     {"In tenant", "租户内位置"},
	"queue.job":      {"Job", "作业"},
	"queue.tenant":   {"Tenant", "租户"},
	"queue.class":    {"Class", "优先级类别"},
	"queue.pool":     {"Pool", "节点池"},
	"queue.request":  {"Request", "资源请求"},
	"queue.wait":     {"Waiting", "已等待"},
	"queue.reason":   {"Reason", "原因"},
	"queue.empty":    {"No queued job matches.", "没有符合条件的排队作业。"},

	// Tenant.
	"tenants.title":       {"Tenants", "租户"},
	"tenants.none":        {"No governed tenant you may read.", "没有您可读取的受治理租户。"},
	"col.cohort":          {"Cohort", "共享组"},
	"col.error":           {"Problem", "问题"},
	"tenant.title":        {"Tenant", "租户"},
	"tenant.cohort":       {"cohort", "共享组"},
	"tenant.weight":       {"weight", "权重"},
	"tenant.defaultclass": {"default class", "默认类别"},
	"tenant.classes":      {"classes", "可用类别"},
	"tenant.metaerror":    {"The namespace's allot.* meta is invalid; its last valid quota applies", "该命名空间的 allot.* 元数据无效，仍沿用上一次有效的配额"},
	"tenant.resources":    {"Quota, limit and lend against use", "配额、上限、可借出与使用情况"},
	"tenant.unbounded":    {"none (cohort capacity)", "无（共享组容量）"},
	"tenant.lendall":      {"all of the quota", "全部配额"},
	"tenant.bar":          {"%.0f%% of the quota used", "已使用配额的 %.0f%%"},
	"tenant.noresources":  {"No quota set and nothing in use.", "未设置配额，也没有使用中的资源。"},
	"tenant.jobs":         {"Jobs", "作业"},
	"tenant.nojobs":       {"Nomad's job list is unavailable", "无法获取 Nomad 作业列表"},
	"tenant.jobscut":      {"The first %d of %d jobs (queued jobs first).", "显示前 %d 个作业，共 %d 个（排队作业在前）。"},
	"tenant.toqueue":      {"This tenant's queue", "该租户的队列"},
	"tenant.nojobslisted": {"No jobs.", "没有作业。"},
	"tenant.setquota":     {"Change the quota", "修改配额"},
	"tenant.quotahint":    {"Sets allot.quota/limit/lend.<resource> of this namespace with your token, checked like allotctl quota set. Empty fields stay as they are. Nomad decides whether your token may write the namespace; the change is written to the audit log with your token as its actor.", "使用您的令牌设置该命名空间的 allot.quota/limit/lend.<资源>，校验规则与 allotctl quota set 相同。留空的字段保持不变。由 Nomad 判断您的令牌是否有权修改该命名空间；修改会以您的令牌为操作者写入审计日志。"},
	"tenant.save":         {"Save quota", "保存配额"},
	"tenant.saved":        {"Saved %s. The governor applies it within seconds.", "已保存 %s，governor 将在几秒内生效。"},
	"tenant.notgoverned":  {"Namespace %s is not a governed tenant.", "命名空间 %s 不是受治理的租户。"},

	// Job.
	"job.title":              {"Job", "作业"},
	"job.nomadsays":          {"Nomad's status: %s", "Nomad 状态：%s"},
	"job.notgoverned":        {"not governed by the governor", "不受 governor 治理"},
	"job.queuedat":           {"Queued at", "排队时间"},
	"job.lostwork":           {"Work lost to preemption", "因抢占损失的工作量"},
	"job.checks":             {"Admission checks", "准入检查"},
	"job.check":              {"Check", "检查项"},
	"job.result":             {"Result", "结果"},
	"job.detail":             {"Numbers", "数值"},
	"job.pass":               {"pass", "通过"},
	"job.fail":               {"fails", "未通过"},
	"job.nochecks":           {"No checks recorded.", "没有检查记录。"},
	"job.decisions":          {"Decisions", "调度决策"},
	"job.kind":               {"Kind", "类型"},
	"job.cause":              {"Cause", "起因"},
	"job.nodecisions":        {"No preemption, requeue or hold recorded.", "没有抢占、重新排队或挂起记录。"},
	"job.checkpoints":        {"Checkpoints", "检查点"},
	"job.alloc":              {"Allocation", "分配"},
	"job.task":               {"Task", "任务"},
	"job.event":              {"Event", "事件"},
	"job.nocheckpoints":      {"No checkpoint events.", "没有检查点事件。"},
	"job.release":            {"Stop and release", "停止并释放"},
	"job.releasehint":        {"Stops the job with your token, as nomad job stop does: a queued job leaves the queue, a running one frees its devices, and the governor does not restart it. Nomad decides whether your token may; the release is written to the audit log with your token as its actor.", "使用您的令牌停止该作业（等同 nomad job stop）：排队中的作业会离开队列，运行中的作业会释放其设备，governor 不会再启动它。由 Nomad 判断您的令牌是否有权操作；该操作会以您的令牌为操作者写入审计日志。"},
	"job.releaserefused":     {"Nomad refused the release (%d): %s", "Nomad 拒绝了停止操作（%d）：%s"},
	"job.released.audited":   {"Stopped and released; written to the audit log.", "已停止并释放，并已写入审计日志。"},
	"job.released.unaudited": {"Stopped and released, but not written to the audit log (the governor's ledger is not configured or failed; see its log).", "已停止并释放，但未写入审计日志（governor 的账本未配置或写入失败，详见日志）。"},
	"job.noallocs":           {"Nomad's allocations are unavailable", "无法获取 Nomad 分配信息"},
}
