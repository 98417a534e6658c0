package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"

	batchv1alpha1 "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	vcv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	vcfake "volcano.sh/apis/pkg/client/clientset/versioned/fake"
	vcinformer "volcano.sh/apis/pkg/client/informers/externalversions"
	"volcano.sh/volcano/cmd/webhook-manager/app/options"
	ctrlframework "volcano.sh/volcano/pkg/controllers/framework"
	_ "volcano.sh/volcano/pkg/controllers/job" // registers the job controller
	_ "volcano.sh/volcano/pkg/webhooks/admission/jobs/mutate"
	_ "volcano.sh/volcano/pkg/webhooks/admission/jobs/validate"
	"volcano.sh/volcano/pkg/webhooks/router"
)

// jobUID is given to a Job that has none (a new one, as a user writes it): the job
// controller names the PodGroup "<job>-<uid>", as the API server's UID would make it.
const jobUID = "job-uid"

// jobWait bounds each wait for the job controller (it works through informers).
const jobWait = 20 * time.Second

// Converted is what Volcano's own code made of a batch.volcano.sh Job: the PodGroup the
// job controller created and the pods it created once the PodGroup left Pending.
type Converted struct {
	PodGroup *vcv1beta1.PodGroup `json:"podGroup"`
	Pods     []*v1.Pod           `json:"pods"`
}

// RefusedError is the Job admission webhook's refusal, in its words.
type RefusedError struct{ Message string }

func (e *RefusedError) Error() string { return "admission refused the Job: " + e.Message }

var jobResource = metav1.GroupVersionResource{Group: "batch.volcano.sh", Version: "v1alpha1", Resource: "jobs"}

// admission runs the Job admission webhooks' own handlers (mutate, then validate) on the
// raw Job, as the API server calls them on create, and returns the mutated Job.
func admission(raw []byte, queues []*vcv1beta1.Queue) (*batchv1alpha1.Job, error) {
	vc := vcfake.NewSimpleClientset()
	for _, q := range queues {
		if _, err := vc.SchedulingV1beta1().Queues().Create(context.Background(), q, metav1.CreateOptions{}); err != nil {
			return nil, err
		}
	}
	factory := vcinformer.NewSharedInformerFactory(vc, 0)
	queueInformer := factory.Scheduling().V1beta1().Queues()
	lister := queueInformer.Lister()
	stop := make(chan struct{})
	defer close(stop)
	factory.Start(stop)
	factory.WaitForCacheSync(stop)
	services := map[string]*router.AdmissionService{}
	err := router.ForEachAdmission(&options.Config{EnabledAdmission: "/jobs/mutate,/jobs/validate"},
		func(s *router.AdmissionService) error {
			s.Config.SchedulerNames = []string{schedulerName}
			s.Config.QueueLister = lister
			s.Config.QueueInformer = queueInformer.Informer()
			services[s.Path] = s
			return nil
		})
	if err != nil {
		return nil, err
	}
	review := func(obj []byte) admissionv1.AdmissionReview {
		return admissionv1.AdmissionReview{Request: &admissionv1.AdmissionRequest{
			Operation: admissionv1.Create, Resource: jobResource,
			Object: runtime.RawExtension{Raw: obj},
		}}
	}
	resp := services["/jobs/mutate"].Func(review(raw))
	if !resp.Allowed {
		return nil, &RefusedError{Message: resp.Result.Message}
	}
	if len(resp.Patch) > 0 {
		patch, err := jsonpatch.DecodePatch(resp.Patch)
		if err != nil {
			return nil, fmt.Errorf("the mutating webhook's patch: %w", err)
		}
		if raw, err = patch.Apply(raw); err != nil {
			return nil, fmt.Errorf("the mutating webhook's patch: %w", err)
		}
	}
	resp = services["/jobs/validate"].Func(review(raw))
	if !resp.Allowed {
		msg := ""
		if resp.Result != nil {
			msg = resp.Result.Message
		}
		return nil, &RefusedError{Message: msg}
	}
	job := &batchv1alpha1.Job{}
	if err := json.Unmarshal(raw, job); err != nil {
		return nil, err
	}
	return job, nil
}

// runJobController runs Volcano's job controller over fake clientsets on the admitted
// Job: it creates the PodGroup; the PodGroup is then set Inqueue (what the scheduler's
// enqueue does), and the controller creates the pods.
func runJobController(job *batchv1alpha1.Job, queues []*vcv1beta1.Queue) (*Converted, error) {
	ctx := context.Background()
	kube := kubefake.NewSimpleClientset()
	vc := vcfake.NewSimpleClientset()
	for _, q := range queues {
		if _, err := vc.SchedulingV1beta1().Queues().Create(ctx, q, metav1.CreateOptions{}); err != nil {
			return nil, err
		}
	}
	opt := &ctrlframework.ControllerOption{
		KubeClient: kube, VolcanoClient: vc,
		SharedInformerFactory:   informers.NewSharedInformerFactory(kube, 0),
		VCSharedInformerFactory: vcinformer.NewSharedInformerFactory(vc, 0),
		SchedulerNames:          []string{schedulerName}, WorkerNum: 1, MaxRequeueNum: 15,
	}
	var ctrl ctrlframework.Controller
	ctrlframework.ForeachController(func(c ctrlframework.Controller) {
		if c.Name() == "job-controller" {
			ctrl = c
		}
	})
	if ctrl == nil {
		return nil, fmt.Errorf("volcano's job controller is not registered")
	}
	if err := ctrl.Initialize(opt); err != nil {
		return nil, fmt.Errorf("job controller: %w", err)
	}
	stop := make(chan struct{})
	defer close(stop)
	ctrl.Run(stop)
	if _, err := vc.BatchV1alpha1().Jobs(job.Namespace).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	pgName := job.Name + "-" + string(job.UID)
	var pg *vcv1beta1.PodGroup
	if err := waitFor(func() bool {
		got, err := vc.SchedulingV1beta1().PodGroups(job.Namespace).Get(ctx, pgName, metav1.GetOptions{})
		pg = got
		return err == nil
	}); err != nil {
		return nil, fmt.Errorf("the job controller created no PodGroup %s/%s", job.Namespace, pgName)
	}
	created := pg.DeepCopy()
	pg.Status.Phase = vcv1beta1.PodGroupInqueue
	if _, err := vc.SchedulingV1beta1().PodGroups(job.Namespace).UpdateStatus(ctx, pg, metav1.UpdateOptions{}); err != nil {
		return nil, err
	}
	want := 0
	for _, t := range job.Spec.Tasks {
		want += int(t.Replicas)
	}
	var pods []v1.Pod
	if err := waitFor(func() bool {
		list, err := kube.CoreV1().Pods(job.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		pods = list.Items
		return len(pods) >= want
	}); err != nil {
		return nil, fmt.Errorf("the job controller created %d of %d pods", len(pods), want)
	}
	// What the scheduler sees: the PodGroup as created (Pending, so the session's enqueue
	// judges it, as advise does) and the pods as the API server stores them (Pending).
	out := &Converted{PodGroup: created}
	if out.PodGroup.Status.Phase == "" {
		out.PodGroup.Status.Phase = vcv1beta1.PodGroupPending
	}
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	for i := range pods {
		p := pods[i].DeepCopy()
		if p.Status.Phase == "" {
			p.Status.Phase = v1.PodPending
		}
		if p.UID == "" {
			p.UID = types.UID("uid-" + p.Namespace + "/" + p.Name)
		}
		out.Pods = append(out.Pods, p)
	}
	return out, nil
}

func waitFor(cond func() bool) error {
	deadline := time.Now().Add(jobWait)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out")
		}
		time.Sleep(5 * time.Millisecond)
	}
	return nil
}

// convertJob turns the -f file's Job into the PodGroup and pods the session sees, by
// Volcano's own webhooks and job controller.
func convertJob(in *inputs) (*Converted, error) {
	queues := append([]*vcv1beta1.Queue(nil), in.queues...)
	if !hasQueue(queues, "default") {
		queues = append(queues, defaultQueue())
	}
	job, err := admission(in.jobRaw, queues)
	if err != nil {
		return nil, err
	}
	if job.Namespace == "" {
		job.Namespace = "default"
	}
	if job.UID == "" {
		job.UID = jobUID
	}
	// The controller's job cache compares resource versions as numbers; the fake
	// clientset's store keeps what it is given.
	job.ResourceVersion = "1"
	return runJobController(job, queues)
}

func hasQueue(qs []*vcv1beta1.Queue, name string) bool {
	for _, q := range qs {
		if q.Name == name {
			return true
		}
	}
	return false
}

func defaultQueue() *vcv1beta1.Queue {
	return &vcv1beta1.Queue{ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec:   vcv1beta1.QueueSpec{Weight: 1},
		Status: vcv1beta1.QueueStatus{State: vcv1beta1.QueueStateOpen}}
}

// isJob tells a batch.volcano.sh Job by its apiVersion and kind.
func isJob(apiVersion, kind string) bool {
	return kind == "Job" && strings.HasPrefix(apiVersion, "batch.volcano.sh/")
}
