# SPDX-License-Identifier: GPL-2.0
# vhost-iommu: load the module (and vhost_net), run the selftests that play VMM
# and guest (each prints its own TAP: every case is a result of this step),
# then check the module refuses to go while a file is open and goes cleanly
# once none is.
rc=0
if ! modprobe vhost_iommu; then
	echo "# modprobe vhost_iommu failed"
	rc=1
fi
# vhost-net, for the test that binds it to an endpoint
if ! modprobe vhost_net; then
	echo "# modprobe vhost_net failed"
	rc=1
fi
# The device against virtio 1.3; what a guest may cost the host; vhost-net
# bound to it; page-table sharing; posted MAP; the state saved and restored
for t in vhost_iommu vhost_iommu_limits vhost_iommu_net vhost_iommu_table \
	 vhost_iommu_posted vhost_iommu_state; do
	"/bin/$t" || rc=1
done
exec 3<>/dev/vhost-iommu
if rmmod vhost_iommu 2>/dev/null; then
	echo "# rmmod vhost_iommu succeeded with /dev/vhost-iommu open"
	rc=1
fi
exec 3>&-
if ! rmmod vhost_iommu; then
	echo "# rmmod vhost_iommu failed"
	rc=1
fi
exit $rc
