package console

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/hashicorp/nomad/acl"

	"github.com/allot-sh/allot/governor/allotapi"
)

// requeueMessages are the labels of the job page's requeue action.
var requeueMessages = map[string]msg{
	"job.requeue":       {"Requeue", "重新排队"},
	"job.requeuereason": {"Reason (optional)", "原因（可选）"},
	"job.requeuehint": {"Checkpoints and stops the running job, as the governor does for a preemption, and puts it back in the queue: it resumes from its checkpoint when the governor admits it again (after the requeue back-off). Your token needs submit-job in this namespace; the requeue is listed under decisions and written to the audit log with your token as its actor.",
		"对运行中的作业保存检查点并停止（与 governor 抢占时的做法相同），再将其放回队列：governor 再次准入时（经过重新排队退避后）它会从检查点恢复。您的令牌需要该命名空间的 submit-job 权限；该操作会记录在调度决策中，并以您的令牌为操作者写入审计日志。"},
	"job.requeuerefused":       {"The governor refused the requeue (%d): %s", "governor 拒绝了重新排队（%d）：%s"},
	"job.requeued.audited":     {"Requeued: the job checkpoints, stops and waits in the queue; written to the audit log.", "已重新排队：作业正在保存检查点并停止，随后在队列中等待；已写入审计日志。"},
	"job.requeued.unaudited":   {"Requeued: the job checkpoints, stops and waits in the queue; not written to the audit log (the governor's ledger is not configured or failed; see its log).", "已重新排队：作业正在保存检查点并停止，随后在队列中等待；未写入审计日志（governor 的账本未配置或写入失败，详见日志）。"},
	"job.requeuereasontoolong": {"The reason is longer than %d characters.", "原因超过 %d 个字符。"},
}

// requeueURL is the form action of the requeue of ns/id.
func requeueURL(ns, id string) string {
	return Prefix + "requeue/" + url.PathEscape(ns) + "/" + url.PathEscape(id)
}

// canRequeue tells whether the job page offers the requeue form: a
// governed job running under Nomad, and a token that may submit jobs in
// its namespace (the API checks it again and decides).
func canRequeue(q *Req, d *jobData) bool {
	running := d.NomadStatus == "running" || d.NomadStatus == "pending"
	return d.Governed && (d.Why.State == "admitted" || d.Why.State == "direct") && running &&
		q.Caller.Allowed(d.Namespace, acl.NamespaceCapabilitySubmitJob)
}

// requeue handles POST /ui/requeue/<ns>/<id> (CSRF and origin checked
// before): it calls the governor's POST /allot/v1/jobs/<ns>/<id>/requeue
// in process with the session's token, so the API's checks decide (403
// without submit-job, 409 for a job not running) and its refusal is shown
// as it came. The API records the decision and the audit entry.
func (c *Console) requeue(w http.ResponseWriter, q *Req) {
	ns, id, ok := c.jobAction(w, q, "requeue")
	if !ok {
		return
	}
	reason, err := allotapi.RequeueReason(q.R.PostFormValue("reason"))
	if err != nil {
		c.fail(w, q, http.StatusBadRequest, q.L.F("job.requeuereasontoolong", allotapi.MaxRequeueReason))
		return
	}
	body, err := json.Marshal(allotapi.RequeueRequest{Reason: reason})
	if err != nil {
		c.fail(w, q, http.StatusInternalServerError, q.L.T("err.internal"))
		return
	}
	path := "/allot/v1/jobs/" + url.PathEscape(ns) + "/" + url.PathEscape(id) + "/requeue"
	rec, err := c.call(q.R.Context(), q, c.opts.API, http.MethodPost, path, bytes.NewReader(body))
	if err != nil {
		c.fail(w, q, http.StatusInternalServerError, q.L.T("err.internal"))
		return
	}
	var res allotapi.RequeueResult
	if rec.status == http.StatusOK && json.Unmarshal(rec.body.Bytes(), &res) != nil {
		c.opts.Log.Error("console job requeue: unreadable answer", "namespace", ns, "job", id)
		c.fail(w, q, http.StatusInternalServerError, q.L.T("err.internal"))
		return
	}
	if rec.status != http.StatusOK {
		c.fail(w, q, rec.status, q.L.F("job.requeuerefused", rec.status, allotapi.ErrorText(rec.body.Bytes())))
		return
	}
	done := "audited"
	if !res.Audited {
		done = "unaudited"
	}
	c.opts.Log.Info("console job requeue", "namespace", ns, "job", id, "accessor", q.Caller.AccessorID, "audited", res.Audited)
	http.Redirect(w, q.R, jobURL(ns, id)+"?requeued="+done, http.StatusSeeOther)
}
